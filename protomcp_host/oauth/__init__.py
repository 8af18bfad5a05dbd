"""protomcp as the OAuth authorization server MCP clients see, in front of the user's identity
provider (--public-url, --oauth-provider): metadata, authorize with consent, the provider's
sign-in, tokens protomcp signs, client ID metadata documents and dynamic registration. Every
record lives in the --store, so a sign-in begun through one host finishes through another."""

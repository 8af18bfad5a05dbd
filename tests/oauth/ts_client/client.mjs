// The official MCP TypeScript SDK's client, signing in with its own OAuth support
// (StreamableHTTPClientTransport + an OAuthClientProvider), then calling tools.
//
//   node client.mjs MCP_URL REDIRECT_URL [CLIENT_METADATA_URL]
//
// With CLIENT_METADATA_URL the SDK uses it as its client_id (a client ID metadata document) when
// the authorization server says it supports them; without, it registers dynamically (RFC 7591).
// The browser is the test's: this script writes one JSON object per line on stdout and reads
// the test's answers on stdin:
//   {"registered": client_id}           the SDK saved client information
//   {"authorize": url}                  open this in the browser; the test answers
//                                       {"callback": the URL the browser was sent back to}
//   {"tokens": {...}}                   the SDK saved tokens (what kind, never the tokens)
//   {"result": ...}                     the tools called: add(2, 3), then whoami
import { createInterface } from 'node:readline';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [mcpUrl, redirectUrl, clientMetadataUrl] = process.argv.slice(2);
const answers = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const say = (message) => { process.stdout.write(`${JSON.stringify(message)}\n`); };

class TestProvider {
  constructor() {
    this.information = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    if (clientMetadataUrl) this.clientMetadataUrl = clientMetadataUrl;
  }

  get redirectUrl() { return redirectUrl; }

  get clientMetadata() {
    return {
      client_name: 'protomcp test: the TypeScript SDK',
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  clientInformation() { return this.information; }

  saveClientInformation(information) {
    this.information = information;
    say({ registered: information.client_id });
  }

  tokens() { return this.saved; }

  saveTokens(tokens) {
    this.saved = tokens;
    say({ tokens: { token_type: tokens.token_type, scope: tokens.scope, refresh: Boolean(tokens.refresh_token) } });
  }

  redirectToAuthorization(url) { say({ authorize: url.href }); }

  saveCodeVerifier(verifier) { this.verifier = verifier; }

  codeVerifier() { return this.verifier; }
}

const provider = new TestProvider();
const client = new Client({ name: 'protomcp-oauth-test', version: '1.0.0' });
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider }));
  throw new Error('connected without signing in');
} catch (error) {
  if (!(error instanceof UnauthorizedError)) throw error;
}
// The browser signs in; the authorization response comes back through the test.
const { value } = await answers.next();
const callback = new URL(JSON.parse(value).callback);
if (callback.searchParams.get('error')) throw new Error(`authorization failed: ${callback.search}`);
const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
await transport.finishAuth(callback.searchParams.get('code'));
await client.connect(transport);
const added = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
const whoami = await client.callTool({ name: 'whoami', arguments: {} });
say({ result: { add: added.content[0].text, whoami: whoami.structuredContent } });
await client.close();
process.exit(0);

// A real OpenID Provider (npm oidc-provider) for the OAuth tests, on a loopback port.
//
//   node idp.mjs PORT            (0: the kernel picks one)
//
// Configured from the environment, set by tests/support/idp.py:
//   IDP_CLIENTS                  JSON list of client metadata (client_id, client_secret, redirect_uris,
//                                grant_types, token_endpoint_auth_method, ...), as oidc-provider takes it
//   IDP_RESOURCE_SCOPES          scopes a token for a resource (RFC 8707 `resource`) may carry
//                                (default "mcp:read mcp:write")
//   IDP_ACCESS_TOKEN_FORMAT      "opaque" (default) or "jwt": access tokens issued for a resource
//   IDP_ACCESS_TOKEN_TTL         their lifetime in seconds (default 600)
//
// Sign-in is scripted: oidc-provider's own interaction pages (login, then consent) are plain HTML
// forms, so a test completes them with form posts and no browser; the account id is the `login`
// field, any password is accepted. Introspection (RFC 7662), revocation and client credentials
// are on. When it listens it prints its issuer URL as one line on stdout; it exits when its
// stdin closes, so it never outlives the test process that started it.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';

import Provider from 'oidc-provider';

const port = Number(process.argv[2] ?? '0');
const clients = JSON.parse(process.env.IDP_CLIENTS ?? '[]');
const resourceScopes = process.env.IDP_RESOURCE_SCOPES ?? 'mcp:read mcp:write';
const accessTokenFormat = process.env.IDP_ACCESS_TOKEN_FORMAT ?? 'opaque';
const accessTokenTTL = Number(process.env.IDP_ACCESS_TOKEN_TTL ?? '600');

// Listen first, so port 0 works and the issuer names the port really bound.
const server = createServer();
await new Promise((resolve) => { server.listen(port, '127.0.0.1', resolve); });
const issuer = `http://127.0.0.1:${server.address().port}`;

// A fresh signing key per run: nothing of a previous test run is trusted.
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: randomBytes(8).toString('hex'), alg: 'RS256', use: 'sig' };

const provider = new Provider(issuer, {
  clients,
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  scopes: ['openid', 'offline_access', 'profile', 'email', ...resourceScopes.split(' ')],
  claims: { openid: ['sub'], profile: ['name'], email: ['email', 'email_verified'] },
  // Every account exists: its id is what the sign-in form was given.
  async findAccount(ctx, sub) {
    return {
      accountId: sub,
      async claims() {
        return { sub, name: `User ${sub}`, email: `${sub}@example.test`, email_verified: true };
      },
    };
  },
  features: {
    devInteractions: { enabled: true }, // the plain login and consent forms the tests post
    introspection: { enabled: true },
    revocation: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (ctx, client, oneOf) => oneOf,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        scope: resourceScopes,
        accessTokenFormat,
        accessTokenTTL,
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  pkce: { required: () => true }, // as an MCP authorization server's upstream should be used
  ttl: { AccessToken: accessTokenTTL, ClientCredentials: accessTokenTTL },
});
// Refused requests are part of the tests: say why on stderr, where the fixture collects it.
provider.on('server_error', (ctx, error) => { console.error('server_error', error); });

server.on('request', provider.callback());
process.stdin.on('end', () => { process.exit(0); });
process.stdin.resume();
process.on('SIGTERM', () => { process.exit(0); });
console.log(issuer);

// A hosted-style MCP server that needs OAuth, on loopback, for agentry's
// tests: the official MCP TypeScript SDK (@modelcontextprotocol/sdk, pinned in
// npm/) serves both the authorization server (mcpAuthRouter: metadata, dynamic
// registration, authorize with PKCE, token, revoke) and the protected resource
// (protected-resource metadata, requireBearerAuth, Streamable HTTP). The
// provider below only keeps codes and tokens: every OAuth rule is the SDK's.
// Sign-in is approved at once (no page), access tokens live ACCESS_TTL seconds
// (2 by default) and come with refresh tokens, so a test sees one expire and
// be refreshed mid-session.
//
//   node oauth-mcp-server.mjs            (prints one JSON line per event on stdout:
//                                         {"event":"listening","url":…} first)
//
// HOSTILE=file-authorize makes the authorization server's metadata name a
// file: address as its sign-in page; HOSTILE=escapes makes registration fail
// with terminal escape sequences in its answer (for the client's defences).
import { randomUUID } from 'node:crypto';
import express from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { mcpAuthRouter, getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { InvalidGrantError, InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';

const ttl = Number(process.env.ACCESS_TTL ?? 2);
const say = (event) => process.stdout.write(JSON.stringify(event) + '\n');

class Clients {
  constructor() { this.clients = new Map(); }
  async getClient(id) { return this.clients.get(id); }
  async registerClient(client) {
    this.clients.set(client.client_id, client);
    say({ event: 'register', client_id: client.client_id });
    return client;
  }
}

class Provider {
  constructor() {
    this.clientsStore = new Clients();
    this.codes = new Map();
    this.access = new Map();
    this.refresh = new Map();
  }
  async authorize(client, params, res) {
    if (!client.redirect_uris.includes(params.redirectUri)) {
      throw new InvalidGrantError('unregistered redirect_uri');
    }
    const code = randomUUID();
    this.codes.set(code, { client, params });
    say({ event: 'authorize', client_id: client.client_id, scopes: params.scopes ?? [], resource: params.resource?.href });
    const target = new URL(params.redirectUri);
    target.searchParams.set('code', code);
    if (params.state !== undefined) target.searchParams.set('state', params.state);
    target.searchParams.set('iss', issuer.href);
    res.redirect(target.toString());
  }
  async challengeForAuthorizationCode(_client, code) {
    const found = this.codes.get(code);
    if (!found) throw new InvalidGrantError('unknown code');
    return found.params.codeChallenge;
  }
  issue(clientId, scopes, resource, grant) {
    const access_token = randomUUID();
    const refresh_token = randomUUID();
    this.access.set(access_token, { clientId, scopes, resource, expiresAt: Date.now() / 1000 + ttl });
    this.refresh.set(refresh_token, { clientId, scopes, resource });
    say({ event: 'token', grant, access_token, refresh_token });
    return { access_token, token_type: 'bearer', expires_in: ttl, refresh_token, scope: scopes.join(' ') };
  }
  async exchangeAuthorizationCode(client, code) {
    const found = this.codes.get(code);
    if (!found || found.client.client_id !== client.client_id) throw new InvalidGrantError('unknown code');
    this.codes.delete(code);
    return this.issue(client.client_id, found.params.scopes ?? [], found.params.resource?.href, 'authorization_code');
  }
  async exchangeRefreshToken(client, refreshToken) {
    const found = this.refresh.get(refreshToken);
    if (!found || found.clientId !== client.client_id) throw new InvalidGrantError('unknown refresh token');
    this.refresh.delete(refreshToken);
    return this.issue(client.client_id, found.scopes, found.resource, 'refresh_token');
  }
  async verifyAccessToken(token) {
    const found = this.access.get(token);
    if (!found) throw new InvalidTokenError('unknown token');
    say({ event: 'verified', expired: found.expiresAt < Date.now() / 1000 });
    return { token, clientId: found.clientId, scopes: found.scopes, expiresAt: Math.floor(found.expiresAt) };
  }
}

const app = express();
const server = app.listen(0, '127.0.0.1', () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  announce(base);
});
let issuer;

function announce(base) {
  issuer = new URL(base + '/');
  const mcpUrl = new URL('/mcp', base);
  const provider = new Provider();
  if (process.env.HOSTILE === 'file-authorize') {
    app.get('/.well-known/oauth-authorization-server', (_req, res) => res.json({
      issuer: issuer.href,
      authorization_endpoint: 'file:///etc/passwd',
      token_endpoint: new URL('/token', base).href,
      registration_endpoint: new URL('/register', base).href,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
    }));
  }
  if (process.env.HOSTILE === 'escapes') {
    app.post('/register', (_req, res) => res.status(400).type('text/plain').send('nope \x1b]0;PWNED\x07\x1b[2J'));
  }
  app.use(mcpAuthRouter({ provider, issuerUrl: issuer, resourceServerUrl: mcpUrl, scopesSupported: ['notes:read'] }));
  const guard = requireBearerAuth({
    verifier: provider,
    resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl),
  });
  app.post('/mcp', express.json(), guard, async (req, res) => {
    const mcp = new McpServer({ name: 'notes', version: '1.0.0' });
    mcp.registerTool('whoami', { description: 'Who the token says the caller is.' }, async (extra) => ({
      content: [{ type: 'text', text: `client ${extra?.authInfo?.clientId ?? 'unknown'}` }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => { transport.close(); mcp.close(); });
    await mcp.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  app.get('/mcp', (_req, res) => res.status(405).end());
  app.delete('/mcp', (_req, res) => res.status(405).end());
  say({ event: 'listening', url: mcpUrl.href });
}

// An OpenID provider on oidc-provider (OpenID Certified): the issuer serve's
// kind jwt is tested against. It listens on 127.0.0.1:$PORT (0: any free
// port), is its own issuer (http://127.0.0.1:<port>), and prints
// "listening http://127.0.0.1:<port>" once it answers discovery.
//
// Its signing keys are $OIDC_JWKS, a JWK set with private keys; the first
// key signs. Access tokens are JWTs (client_credentials, with a resource
// indicator as their audience), for these clients (secret: "<id>-secret"):
//
//   ops-bot  groups ["sre", "oncall"] (a list), tenant_id "acme"
//   str-bot  groups "sre oncall" (a space-separated string), tenant_id "globex"
//
// and these resources: urn:heddle:invoke (scope invoke), urn:other:service
// (scope read), and any http://127.0.0.1:PORT/… URL (scope mcp: a server a
// test started).
//
// It exchanges tokens (RFC 8693) as Keycloak, Entra and Okta do, for the
// client heddle-worker (secret "heddle-worker-secret"; grant types
// client_credentials and token exchange): grant_type
// urn:ietf:params:oauth:grant-type:token-exchange with a subject_token of
// type urn:ietf:params:oauth:token-type:access_token — a JWT access token
// this provider issued for urn:heddle:invoke, still valid — and one
// resource. It issues a JWT access token for that resource with the
// subject's sub, its groups and tenant, and act: {sub: <the client>}. A
// subject token it did not issue, or that expired, is invalid_grant.
//
//   POST /admin/rotate  body: a JWK set; the provider signs with its first key from now on
//   GET  /admin/stats   {"jwks": N}: how many times the key set was read
import crypto from 'node:crypto';
import http from 'node:http';
import Provider, { errors } from 'oidc-provider';

const clients = {
  'ops-bot': { groups: ['sre', 'oncall'], tenant_id: 'acme' },
  'str-bot': { groups: 'sre oncall', tenant_id: 'globex' },
};
const resources = {
  'urn:heddle:invoke': 'invoke',
  'urn:other:service': 'read',
};
const loopback = /^http:\/\/127\.0\.0\.1:[0-9]+\//;
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
const worker = 'heddle-worker';

let jwksReads = 0;
let provider;
let handler = (_req, res) => res.writeHead(503).end();

// build makes the provider of issuer that signs with jwks' first key.
function build(issuer, jwks) {
  const kid = jwks.keys[0].kid;
  const p = new Provider(issuer, {
    jwks,
    scopes: [...Object.values(resources), 'mcp'],
    clients: [
      ...Object.keys(clients).map((id) => ({
        client_id: id,
        client_secret: `${id}-secret`,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        scope: Object.values(resources).join(' '),
      })),
      {
        client_id: worker,
        client_secret: `${worker}-secret`,
        grant_types: ['client_credentials', TOKEN_EXCHANGE],
        redirect_uris: [],
        response_types: [],
        scope: 'mcp',
      },
    ],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => resourceServer(indicator, kid),
      },
    },
    extraTokenClaims: (ctx, token) => (ctx?.exchanged ? clients[ctx.exchanged.sub] : clients[token.clientId]),
    formats: {
      customizers: {
        // An exchanged token is the subject's, with heddle's client as the
        // actor (RFC 8693, section 4.1).
        jwt: (ctx, _token, jwt) => {
          if (ctx?.exchanged) {
            jwt.payload.sub = ctx.exchanged.sub;
            jwt.payload.act = { sub: ctx.oidc.client.clientId };
          }
        },
      },
    },
  });
  p.registerGrantType(TOKEN_EXCHANGE, exchange.bind(undefined, p, jwks), ['subject_token', 'subject_token_type', 'resource', 'scope', 'audience', 'actor_token', 'actor_token_type', 'requested_token_type']);
  p.on('server_error', (_ctx, err) => console.error('server_error', err));
  return p;
}

// resourceServer is what tokens for indicator are: a known resource, or a
// server on loopback that a test started.
function resourceServer(indicator, kid) {
  let scope = resources[indicator];
  if (scope === undefined && loopback.test(indicator)) scope = 'mcp';
  if (scope === undefined) throw new errors.InvalidTarget(`unknown resource ${indicator}`);
  return {
    scope,
    audience: indicator,
    accessTokenTTL: 300,
    accessTokenFormat: 'jwt',
    jwt: { sign: { alg: 'RS256', kid } },
  };
}

// exchange is the token exchange grant: the subject token must be a JWT
// access token of this provider's for urn:heddle:invoke, signed by one of
// its keys and still valid.
async function exchange(p, jwks, ctx) {
  const { params, client } = ctx.oidc;
  if (params.subject_token_type !== ACCESS_TOKEN) {
    throw new errors.InvalidRequest('subject_token_type must be urn:ietf:params:oauth:token-type:access_token');
  }
  if (params.actor_token) throw new errors.InvalidRequest('actor_token is not supported: the client is the actor');
  const subject = verifyAccessToken(p.issuer, jwks, params.subject_token);
  if (!subject) throw new errors.InvalidGrant('the subject token is not a valid access token of this issuer for urn:heddle:invoke');
  if (typeof params.resource !== 'string') throw new errors.InvalidTarget('exactly one resource is required');
  const info = resourceServer(params.resource, jwks.keys[0].kid);
  ctx.exchanged = { sub: subject.sub };
  const token = new p.ClientCredentials({ client, scope: info.scope });
  token.resourceServer = new p.ResourceServer(params.resource, info);
  const value = await token.save();
  ctx.body = {
    access_token: value,
    issued_token_type: ACCESS_TOKEN,
    token_type: 'Bearer',
    expires_in: token.expiration,
    scope: token.scope,
  };
}

// verifyAccessToken returns the claims of token when it is an RS256 JWT
// signed by a key of jwks, issued by issuer for urn:heddle:invoke, and not
// expired; otherwise undefined.
function verifyAccessToken(issuer, jwks, token) {
  const parts = String(token ?? '').split('.');
  if (parts.length !== 3) return undefined;
  try {
    const header = JSON.parse(Buffer.from(parts[0], 'base64url'));
    const claims = JSON.parse(Buffer.from(parts[1], 'base64url'));
    const jwk = jwks.keys.find((k) => k.kid === header.kid);
    if (header.alg !== 'RS256' || !jwk) return undefined;
    const key = crypto.createPublicKey({ key: jwk, format: 'jwk' });
    const signed = crypto.verify('RSA-SHA256', Buffer.from(`${parts[0]}.${parts[1]}`), key, Buffer.from(parts[2], 'base64url'));
    const aud = [].concat(claims.aud);
    if (!signed || claims.iss !== issuer || !aud.includes('urn:heddle:invoke') || !(claims.exp > Date.now() / 1000)) return undefined;
    return claims;
  } catch {
    return undefined;
  }
}

const port = Number(process.env.PORT ?? 0);
const server = http.createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/admin/rotate') {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      try {
        provider = build(provider.issuer, JSON.parse(body));
        handler = provider.callback();
        res.writeHead(204).end();
      } catch (err) {
        res.writeHead(400).end(String(err));
      }
    });
    return;
  }
  if (req.method === 'GET' && req.url === '/admin/stats') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jwks: jwksReads }));
    return;
  }
  if (req.url === '/jwks') jwksReads++;
  handler(req, res);
});
server.listen(port, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  provider = build(issuer, JSON.parse(process.env.OIDC_JWKS));
  handler = provider.callback();
  console.log(`listening ${issuer}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));

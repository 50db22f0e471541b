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
// (scope read).
//
//   POST /admin/rotate  body: a JWK set; the provider signs with its first key from now on
//   GET  /admin/stats   {"jwks": N}: how many times the key set was read
import http from 'node:http';
import Provider from 'oidc-provider';

const clients = {
  'ops-bot': { groups: ['sre', 'oncall'], tenant_id: 'acme' },
  'str-bot': { groups: 'sre oncall', tenant_id: 'globex' },
};
const resources = {
  'urn:heddle:invoke': 'invoke',
  'urn:other:service': 'read',
};

let jwksReads = 0;
let provider;
let handler = (_req, res) => res.writeHead(503).end();

// build makes the provider of issuer that signs with jwks' first key.
function build(issuer, jwks) {
  const kid = jwks.keys[0].kid;
  const p = new Provider(issuer, {
    jwks,
    scopes: Object.values(resources),
    clients: Object.keys(clients).map((id) => ({
      client_id: id,
      client_secret: `${id}-secret`,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      scope: Object.values(resources).join(' '),
    })),
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (!(indicator in resources)) throw new Error(`unknown resource ${indicator}`);
          return {
            scope: resources[indicator],
            audience: indicator,
            accessTokenTTL: 300,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256', kid } },
          };
        },
      },
    },
    extraTokenClaims: (_ctx, token) => clients[token.clientId],
  });
  p.on('server_error', (_ctx, err) => console.error('server_error', err));
  return p;
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

// Sign-in: HTTP Basic hands out an access token (a JWT our keys sign; their public keys at
// JWKS_PATH); OpenID Connect providers are listed for clients.
import type { AppRoute } from './context.js';
import { ApiError } from '../core/errors.js';
import { json } from './reply.js';

/** Where the public keys of our access tokens are published (a JWK Set), at the host root. */
export const JWKS_PATH = '/.well-known/jwks.json';

export const jwksRoute: AppRoute = {
  method: 'GET',
  path: JWKS_PATH,
  summary: 'Public keys that verify the access tokens of this back-end (JWK Set)',
  auth: 'none',
  handler: (req) => ({
    status: 200,
    json: req.app.keys.jwks(),
    contentType: 'application/jwk-set+json',
    // Short: the next key is published a whole rotation period before it signs.
    headers: { 'Cache-Control': 'public, max-age=300' },
  }),
};

export const routes: AppRoute[] = [
  {
    method: 'GET',
    path: '/credentials/basic',
    summary: 'Sign in with HTTP Basic and get an access token',
    auth: 'basic',
    handler: async (req) => {
      const { token, user } = await req.app.auth.signIn(req.header('authorization'), req.clientAddress, {
        ttlSeconds: req.app.config.tokenTtlSeconds,
        prefix: req.version.prefix,
      });
      // user_id is what API 1.0.0-rc.2 clients expect beside the token; later clients ignore it.
      return json({ access_token: token, ...(req.version.apiVersion === '1.0.0-rc.2' ? { user_id: user.id } : {}) });
    },
  },
  {
    method: 'GET',
    path: '/credentials/oidc',
    summary: 'OpenID Connect providers to sign in with',
    auth: 'none',
    enabled: (ctx) => ctx.config.oidcProviders.length > 0,
    handler: (req) => {
      if (req.header('authorization')) {
        throw new ApiError('AuthenticationSchemeInvalid', {}, 'This endpoint is public: send it no Authorization header.');
      }
      const providers = req.app.config.oidcProviders.map((p) => ({
        id: p.id,
        issuer: p.issuer,
        title: p.title,
        ...(p.description ? { description: p.description } : {}),
        scopes: p.scopes ?? ['openid'],
        ...(p.default_clients ? { default_clients: p.default_clients } : {}),
        ...(p.authorization_parameters ? { authorization_parameters: p.authorization_parameters } : {}),
        links: [],
      }));
      return json({ providers });
    },
  },
];

// Sign-in: HTTP Basic hands out an access token; OpenID Connect providers are listed for clients.
import type { AppRoute } from './context.js';
import { ApiError } from '../core/errors.js';
import { json } from './reply.js';

export const routes: AppRoute[] = [
  {
    method: 'GET',
    path: '/credentials/basic',
    summary: 'Sign in with HTTP Basic and get an access token',
    auth: 'basic',
    handler: async (req) => {
      const { token, user } = await req.app.auth.signIn(req.header('authorization'), req.clientAddress, req.app.config.tokenTtlSeconds);
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
        links: [],
      }));
      return json({ providers });
    },
  },
];

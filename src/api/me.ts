// GET /me: who the token belongs to, and how much of their storage is used.
import type { AppRoute } from './context.js';
import { json } from './reply.js';
import { ApiError } from '../core/errors.js';
import { DEFAULT_PLAN } from './capabilities.js';

export const routes: AppRoute[] = [
  {
    method: 'GET',
    path: '/me',
    summary: 'The signed-in user',
    auth: 'required',
    handler: async (req) => {
      const user = req.me;
      const quota = user.quotaBytes ?? req.app.config.userQuotaBytes;
      // A file store that is away (503) leaves out the storage figures, not the whole answer.
      const used = await req.app.workspaces.usage(user.id).catch((e: unknown) => {
        if (e instanceof ApiError && e.status === 503) return null;
        throw e;
      });
      return json({
        user_id: user.id,
        name: user.name,
        default_plan: DEFAULT_PLAN,
        ...(used === null ? {} : { storage: { free: Math.max(0, quota - used), quota } }),
        budget: null,
        links: [{ rel: 'related', href: req.url('/files'), type: 'application/json', title: 'Your files' }],
      });
    },
  },
];

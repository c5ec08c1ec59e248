// GET /me: who the token belongs to, and how much of their storage is used.
import type { AppRoute } from './context.js';
import { json } from './reply.js';
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
      const used = await req.app.workspaces.usage(user.id);
      return json({
        user_id: user.id,
        name: user.name,
        default_plan: DEFAULT_PLAN,
        storage: { free: Math.max(0, quota - used), quota },
        budget: null,
        links: [{ rel: 'related', href: req.url('/files'), type: 'application/json', title: 'Your files' }],
      });
    },
  },
];

// The user's file workspace: list, download, upload (streamed, atomic) and delete.
import type { AppRoute } from './context.js';
import { json, empty } from './reply.js';
import { parseUserPath } from '../files/paths.js';
import { paginate, fromSorted } from './paging.js';
import { parseRange } from './job-results.js';

export const routes: AppRoute[] = [
  {
    method: 'GET',
    path: '/files',
    summary: 'Your files',
    auth: 'required',
    handler: async (req) => {
      const all = await req.app.workspaces.list(req.me.id);
      const { items, links } = await paginate(
        req,
        fromSorted(all, (f) => f.path),
        (f) => f.path,
      );
      return json({ files: items, links });
    },
  },
  {
    method: 'GET',
    path: '/files/{path}',
    summary: 'Download a file',
    auth: 'required',
    handler: async (req) => {
      const path = parseUserPath(req.params.path);
      const file = await req.app.workspaces.open(req.me.id, path, (size) => parseRange(req.header('range'), size));
      const name = path.slice(path.lastIndexOf('/') + 1);
      const r = file.range;
      return {
        status: r ? 206 : 200,
        stream: file.stream,
        size: r ? r.end - r.start + 1 : file.size,
        contentType: 'application/octet-stream',
        headers: {
          'Accept-Ranges': 'bytes',
          ...(r ? { 'Content-Range': `bytes ${r.start}-${r.end}/${file.size}` } : {}),
          'Last-Modified': file.modified.toUTCString(),
          'Content-Disposition': `attachment; filename*=UTF-8''${encodeURIComponent(name)}`,
        },
      };
    },
  },
  {
    method: 'PUT',
    path: '/files/{path}',
    summary: 'Upload a file',
    auth: 'required',
    body: 'stream',
    handler: async (req) => {
      const path = parseUserPath(req.params.path);
      const user = req.me;
      const declared = req.header('content-length');
      const record = await req.app.workspaces.upload(
        user.id,
        path,
        user.quotaBytes ?? req.app.config.userQuotaBytes,
        req.bodyStream(),
        declared !== undefined && /^\d+$/.test(declared) ? Number(declared) : null,
      );
      return json(record);
    },
  },
  {
    method: 'DELETE',
    path: '/files/{path}',
    summary: 'Delete a file',
    auth: 'required',
    status: 204,
    handler: async (req) => {
      await req.app.workspaces.remove(req.me.id, parseUserPath(req.params.path));
      return empty();
    },
  },
];

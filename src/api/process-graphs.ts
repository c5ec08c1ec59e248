// Stored user-defined processes: the 1.x endpoints (GET, PUT, DELETE) plus the interface spec's
// POST (server-chosen id) and PATCH (first-level update). Each user sees only their own.
import type { AppRequest, AppRoute } from './context.js';
import { randomBytes } from 'node:crypto';
import { ApiError } from '../core/errors.js';
import { json, empty } from './reply.js';
import { requireSoundGraph } from './processes.js';
import { paginate } from './paging.js';
import { processCatalog } from '../process-catalog/catalog.js';
import { isObject } from '../core/graph.js';

const ID = /^\w+$/;
/** Members of `process_graph_with_metadata` a user may set (besides the path-given id). */
const EDITABLE = new Set(['summary', 'description', 'categories', 'parameters', 'returns', 'deprecated', 'experimental', 'exceptions', 'examples', 'links', 'process_graph', 'title']);
/** What lists show; the rest (process_graph, examples, ...) only the single-process answer. */
const LIST_MEMBERS = ['summary', 'description', 'categories', 'parameters', 'returns', 'deprecated', 'experimental'];

/** Checks a process body and returns what is stored: the given members plus the id. */
function normalise(req: AppRequest, id: string, body: Record<string, unknown>): Record<string, unknown> {
  if (body.process_graph === undefined || body.process_graph === null) throw new ApiError('ProcessGraphMissing');
  const invalid = (reason: string): never => {
    throw new ApiError('ProcessInvalid', { reason });
  };
  for (const k of ['summary', 'description', 'title'] as const) {
    if (body[k] !== undefined && body[k] !== null && typeof body[k] !== 'string') invalid(`'${k}' must be a string`);
  }
  for (const k of ['categories', 'parameters', 'examples', 'links'] as const) {
    if (body[k] !== undefined && body[k] !== null && !Array.isArray(body[k])) invalid(`'${k}' must be an array`);
  }
  if (Array.isArray(body.parameters)) {
    body.parameters.forEach((p, i) => {
      if (!isObject(p) || typeof p.name !== 'string' || !ID.test(p.name)) invalid(`parameter #${i} needs a 'name' of letters, digits and underscores`);
    });
  }
  for (const k of ['returns', 'exceptions'] as const) {
    if (body[k] !== undefined && body[k] !== null && !isObject(body[k])) invalid(`'${k}' must be an object`);
  }
  for (const k of ['deprecated', 'experimental'] as const) {
    if (body[k] !== undefined && typeof body[k] !== 'boolean') invalid(`'${k}' must be true or false`);
  }
  // A draft is stored as soon as its graph is sound in structure (one result node, references that
  // resolve, no cycle, ids and reference objects well formed): editors save work in progress. What
  // else is wrong (a missing argument, an unknown process) /validation reports, and running it.
  requireSoundGraph(req, body);
  const stored: Record<string, unknown> = { id };
  for (const [k, v] of Object.entries(body)) if (k !== 'id') stored[k] = v;
  // The interface spec's drafts call the short text `title`; API 1.x calls it `summary`.
  if (typeof stored.title === 'string' && stored.summary === undefined) stored.summary = stored.title;
  return stored;
}

function pathId(req: AppRequest): string {
  const id = req.params.process_graph_id;
  if (!ID.test(id)) throw new ApiError('ProcessGraphNotFound', { identifier: id });
  return id;
}

async function stored(req: AppRequest) {
  const id = pathId(req);
  const found = await req.app.store.processGraphs.get(req.me.id, id);
  if (!found) throw new ApiError('ProcessGraphNotFound', { identifier: id });
  return found;
}

export const routes: AppRoute[] = [
  {
    method: 'GET',
    path: '/process_graphs',
    summary: 'Your stored processes',
    auth: 'required',
    handler: async (req) => {
      const repo = req.app.store.processGraphs;
      const { items, links } = await paginate(
        req,
        (after, n) => repo.list(req.me.id, after, n),
        (p) => p.id,
      );
      const processes = items.map((p) => {
        const meta: Record<string, unknown> = { id: p.id };
        for (const k of LIST_MEMBERS) if (p.process[k] !== undefined) meta[k] = p.process[k];
        return meta;
      });
      return json({ processes, links });
    },
  },
  {
    method: 'POST',
    path: '/process_graphs',
    summary: 'Store a new process under an id chosen by the back-end',
    auth: 'required',
    body: 'json',
    status: 201,
    handler: async (req) => {
      const body = await req.jsonObject();
      const id = `pg_${randomBytes(8).toString('hex')}`;
      await req.app.store.processGraphs.put(req.me.id, id, normalise(req, id, body));
      return empty(201, { Location: req.url(`/process_graphs/${id}`), [`${req.app.brandWord}-Identifier`]: id });
    },
  },
  {
    method: 'GET',
    path: '/process_graphs/{process_graph_id}',
    summary: 'One stored process',
    auth: 'required',
    handler: async (req) => json((await stored(req)).process),
  },
  {
    method: 'PUT',
    path: '/process_graphs/{process_graph_id}',
    summary: 'Store or replace a process under this id',
    auth: 'required',
    body: 'json',
    handler: async (req) => {
      const id = req.params.process_graph_id;
      if (!ID.test(id)) throw new ApiError('ProcessInvalid', { reason: 'the id may hold only letters, digits and underscores' });
      if (processCatalog.has(id)) throw new ApiError('PredefinedProcessExists', { identifier: id });
      const body = await req.jsonObject();
      await req.app.store.processGraphs.put(req.me.id, id, normalise(req, id, body));
      return empty(200);
    },
  },
  {
    method: 'PATCH',
    path: '/process_graphs/{process_graph_id}',
    summary: 'Change first-level members of a stored process',
    auth: 'required',
    body: 'json',
    status: 204,
    handler: async (req) => {
      const current = await stored(req);
      const body = await req.jsonObject();
      const keys = Object.keys(body);
      // An update that changes nothing succeeds as a no-op.
      if (keys.length === 0) return empty(204);
      for (const k of keys) if (!EDITABLE.has(k)) throw new ApiError('PropertyNotEditable', { property: k });
      const merged = { ...current.process, ...body };
      await req.app.store.processGraphs.put(req.me.id, current.id, normalise(req, current.id, merged));
      return empty(204);
    },
  },
  {
    method: 'DELETE',
    path: '/process_graphs/{process_graph_id}',
    summary: 'Delete a stored process',
    auth: 'required',
    status: 204,
    handler: async (req) => {
      const id = pathId(req);
      if (!(await req.app.store.processGraphs.delete(req.me.id, id))) throw new ApiError('ProcessGraphNotFound', { identifier: id });
      return empty(204);
    },
  },
];

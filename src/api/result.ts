// Synchronous processing: POST /result validates the graph, runs it on a compute thread and
// answers the encoded result (the format of save_result, JSON without one) with its costs.
import type { AppRequest, AppRoute } from './context.js';
import { json } from './reply.js';
import { serverTiming } from '../core/stages.js';
import { messageOf } from '../core/messages.js';
import { runLogsOf } from '../core/run-context.js';
import { syncLogOwner, type SyncLogEntry } from '../compute/sync-logs.js';
import { ApiError } from '../core/errors.js';
import { RequestAborted } from '../core/errors.js';
import { forEachNode, type Graph, type UserProcess } from '../core/graph.js';
import { processOfBody, requireValidGraph } from './processes.js';
import { DEFAULT_PLAN } from './capabilities.js';

import { costsOf, valuesFor } from '../compute/costs.js';

/** Checks `plan` and `budget` of a request body. */
export function checkBilling(body: Record<string, unknown>): void {
  if (body.plan !== undefined && body.plan !== null && String(body.plan).toLowerCase() !== DEFAULT_PLAN) throw new ApiError('BillingPlanInvalid');
  if (body.budget !== undefined && body.budget !== null && (typeof body.budget !== 'number' || !(body.budget > 0))) throw new ApiError('BudgetInvalid');
}

/** Whether the graph writes logs of the user's own (inspect, or a UDF's prints): only such requests keep theirs. */
function userLogs(graph: unknown, userProcesses: Record<string, UserProcess>): boolean {
  let found = false;
  const visit = (g: unknown) => forEachNode(g, (n) => (found ||= n.process_id === 'run_udf' || n.process_id === 'inspect'));
  visit(graph);
  for (const p of Object.values(userProcesses)) visit(p.process_graph);
  return found;
}

/** Keeps a request's log entries and answers the Link header to them (rel monitor). */
async function monitorLink(req: AppRequest, entries: SyncLogEntry[]): Promise<string> {
  const id = await req.app.syncLogs.save(req.me.id, entries);
  return `<${req.url(`/logs/${id}`)}>; rel="monitor"`;
}

export const routes: AppRoute[] = [
  {
    method: 'GET',
    path: '/logs/{log_id}',
    summary: 'The log of a synchronous request (linked from its answer)',
    auth: 'required',
    handler: async (req) => {
      const id = req.params.log_id;
      if (!/^[0-9a-f]{24}$/.test(id)) throw new ApiError('NotFound');
      const logs = await req.app.store.logs.page(syncLogOwner(req.me.id, id), null, 'debug', 1001);
      if (!logs.length) throw new ApiError('NotFound');
      return json({ level: 'debug', logs, links: [] });
    },
  },
  {
    method: 'POST',
    path: '/result',
    summary: 'Process and download data synchronously',
    auth: 'required',
    body: 'json',
    handler: async (req) => {
      const body = await req.jsonObject();
      const proc = processOfBody(body);
      checkBilling(body);
      const userProcesses = await requireValidGraph(req, proc);
      const cfg = req.app.config;
      const budget = typeof body.budget === 'number' ? body.budget : null;
      // A budget in credits pays for this many raster values.
      const budgetValues = budget === null ? undefined : valuesFor(budget);
      // A client that goes away cancels its computation.
      const ac = new AbortController();
      req.onAbort(() => ac.abort(new RequestAborted()));
      const release = await req.app.userSlots.acquire(req.me.id);
      let out;
      try {
        out = await req.app.compute.run(
          {
            graph: proc.process_graph as Graph,
            userProcesses,
            maxValues: cfg.syncMaxValues,
            limitAdvice: 'Run it as a batch job (POST /jobs), or narrow the extent, dates or bands.',
            budgetValues,
            mode: 'sync',
            user: req.me.id,
            udfTimeoutMs: cfg.udf.timeoutSeconds * 1000,
          },
          ac.signal,
        );
      } catch (e) {
        // The failure links to what the run logged (a UDF's prints and its traceback).
        if (e instanceof ApiError && e.status < 500 && (e.stacktrace || (runLogsOf(e).length && userLogs(proc.process_graph, userProcesses)))) {
          const entry: SyncLogEntry = { level: 'error', code: e.code, message: messageOf(e, 'en').text, time: new Date().toISOString(), ...(e.stacktrace ? { stacktrace: e.stacktrace } : {}) };
          e.headers = { ...e.headers, Link: await monitorLink(req, [...runLogsOf(e), entry]) };
        }
        throw e;
      } finally {
        release();
      }
      const headers: Record<string, string> = { [`${req.app.brandWord}-Costs`]: String(costsOf(out.values)), 'Server-Timing': serverTiming(out.stages) };
      if (out.logs.length && userLogs(proc.process_graph, userProcesses)) headers.Link = await monitorLink(req, out.logs);
      return { status: 200, body: out.body, contentType: out.mediaType, headers };
    },
  },
];

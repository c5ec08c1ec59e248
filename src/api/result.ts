// Synchronous processing: POST /result validates the graph, runs it on a compute thread and
// answers the encoded result (the format of save_result, JSON without one) with its costs. Each
// request gets an identifier ({Brand}-Identifier); what it logged at its `log_level` or above is
// kept for an hour at GET /logs/{id}, linked from the answer (Link, rel monitor), also when it fails.
import type { AppRequest, AppRoute } from './context.js';
import { ApiError, RequestAborted } from '../core/errors.js';
import type { Graph } from '../core/graph.js';
import type { LogLevel } from '../core/run-context.js';
import { messageOf } from '../core/messages.js';
import { runLogsOf } from '../core/run-context.js';
import { serverTiming } from '../core/stages.js';
import { ownMembers, processOfBody, requireValidGraph } from './processes.js';
import { ignoredMembersMessage, processDefaults, requestOptions, resolveOptions } from '../core/processing-options.js';
import { DEFAULT_PLAN } from './capabilities.js';
import { costsOf, valuesFor } from '../compute/costs.js';
import { newSyncId, SYNC_ID, syncLogOwner, type SyncLogEntry } from '../compute/sync-logs.js';
import { levelRank } from '../store/logs.js';
import { logLevelMember } from './members.js';
import { logsReply } from './logs.js';

/** Checks `plan` and `budget` of a request body. */
export function checkBilling(body: Record<string, unknown>): void {
  if (body.plan !== undefined && body.plan !== null && String(body.plan).toLowerCase() !== DEFAULT_PLAN) throw new ApiError('BillingPlanInvalid');
  if (body.budget !== undefined && body.budget !== null && (typeof body.budget !== 'number' || !(body.budget > 0))) throw new ApiError('BudgetInvalid');
}

const invalid = (property: string, reason: string) => new ApiError('PropertyInvalid', { property, reason });

/** Members of a synchronous request of its own; every other top-level member is a processing parameter. */
const OWN = ['process', 'plan', 'budget', 'log_level'];

/** Keeps what a request logged at `level` or above; answers the headers that name it and link to its log. */
async function logHeaders(req: AppRequest, id: string, level: LogLevel, entries: SyncLogEntry[]): Promise<Record<string, string>> {
  const kept = entries.filter((e) => levelRank(e.level) <= levelRank(level));
  const headers: Record<string, string> = { [`${req.app.brandWord}-Identifier`]: id };
  if (!kept.length) return headers;
  await req.app.syncLogs.save(req.me.id, id, kept);
  headers.Link = `<${req.url(`/logs/${id}`)}>; rel="monitor"`;
  return headers;
}

export const routes: AppRoute[] = [
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
      const { options: given, ignored } = requestOptions(req.app.processing.sync, body, ownMembers(body, OWN));
      // Stray members are ignored, and said so first in the request's log.
      const warnings: SyncLogEntry[] = ignored.length ? [{ level: 'warning', message: ignoredMembersMessage('sync', ignored), time: new Date().toISOString() }] : [];
      const userProcesses = await requireValidGraph(req, proc);
      // The request's processing parameters, else its processes', else the defaults.
      const options = resolveOptions(req.app.processing.sync, given, processDefaults('sync', proc, userProcesses));
      const level: LogLevel = 'log_level' in body ? (body.log_level === null ? 'info' : logLevelMember(body.log_level, 'log_level', invalid)) : (options.log_level as LogLevel);
      const budget = typeof body.budget === 'number' ? body.budget : null;
      // A budget in credits pays for this many raster values.
      const budgetValues = budget === null ? undefined : valuesFor(budget);
      const id = newSyncId();
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
            maxValues: options.max_values as number,
            limitAdvice: 'Run it as a batch job (POST /jobs), or narrow the extent, dates or bands.',
            budgetValues,
            mode: 'sync',
            user: req.me.id,
            udfTimeoutMs: req.app.config.udf.timeoutSeconds * 1000,
          },
          ac.signal,
        );
      } catch (e) {
        // A failure of the run that is the user's to fix is kept in the request's log too (with
        // the stack trace of the user's own code, when there is one).
        if (e instanceof ApiError && e.status < 500 && !(e instanceof RequestAborted)) {
          const entry: SyncLogEntry = { level: 'error', code: e.code, message: messageOf(e, 'en').text, time: new Date().toISOString(), ...(e.stacktrace ? { stacktrace: e.stacktrace } : {}) };
          // What the run logged before it failed (a UDF's prints) comes first.
          e.headers = { ...e.headers, ...(await logHeaders(req, id, level, [...warnings, ...runLogsOf(e), entry]).catch(() => ({}))) };
        }
        throw e;
      } finally {
        release();
      }
      const headers = { [`${req.app.brandWord}-Costs`]: String(costsOf(out.values)), 'Server-Timing': serverTiming(out.stages), ...(await logHeaders(req, id, level, [...warnings, ...out.logs])) };
      return { status: 200, body: out.body, contentType: out.mediaType, headers };
    },
  },
  {
    method: 'GET',
    path: '/logs/{log_id}',
    summary: 'The log of a synchronous request (linked from its answer)',
    auth: 'required',
    handler: async (req) => {
      const id = req.params.log_id;
      const owner = syncLogOwner(req.me.id, id);
      // An id that is not ours, of another user, or whose hour has passed: nothing here.
      if (!SYNC_ID.test(id) || !(await req.app.store.logs.page(owner, null, 'debug', 1)).length) throw new ApiError('NotFound', {}, 'There is no log of a request with this id (they are kept for an hour).');
      return logsReply(req, owner, 'debug');
    },
  },
];

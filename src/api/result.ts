// Synchronous processing: POST /result validates the graph, runs it on a compute thread and
// answers the encoded result (the format of save_result, JSON without one) with its costs.
import type { AppRoute } from './context.js';
import { ApiError } from '../core/errors.js';
import { RequestAborted } from '../core/errors.js';
import type { Graph } from '../core/graph.js';
import { userProcessesOf } from '../graph/user-processes.js';
import { processOfBody, requireValidGraph } from './processes.js';
import { DEFAULT_PLAN } from './capabilities.js';

import { costsOf, valuesFor } from '../compute/costs.js';

/** Checks `plan` and `budget` of a request body. */
export function checkBilling(body: Record<string, unknown>): void {
  if (body.plan !== undefined && body.plan !== null && String(body.plan).toLowerCase() !== DEFAULT_PLAN) throw new ApiError('BillingPlanInvalid');
  if (body.budget !== undefined && body.budget !== null && (typeof body.budget !== 'number' || !(body.budget > 0))) throw new ApiError('BudgetInvalid');
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
      requireValidGraph(req, proc);
      const cfg = req.app.config;
      const budget = typeof body.budget === 'number' ? body.budget : null;
      // A budget in credits pays for this many raster values.
      const budgetValues = budget === null ? undefined : valuesFor(budget);
      // A client that goes away cancels its computation.
      const ac = new AbortController();
      req.onAbort(() => ac.abort(new RequestAborted()));
      const release = req.app.userSlots.acquire(req.me.id);
      let out;
      try {
        out = await req.app.compute.run(
          {
            graph: proc.process_graph as Graph,
            userId: req.me.id,
            userProcesses: userProcessesOf(req.app.store.processGraphs, req.user?.id ?? null, proc.process_graph),
            maxValues: cfg.syncMaxValues,
            limitAdvice: 'Run it as a batch job (POST /jobs), or narrow the extent, dates or bands.',
            budgetValues,
            mode: 'sync',
          },
          ac.signal,
        );
      } finally {
        release();
      }
      return {
        status: 200,
        body: out.body,
        contentType: out.mediaType,
        headers: { [`${req.app.brandWord}-Costs`]: String(costsOf(out.values)) },
      };
    },
  },
];

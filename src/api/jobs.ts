// Batch jobs: list, create, read, change, delete, estimate and logs. The status machine, the queue
// and the runs are in jobs/service.ts; results and downloads in job-results.ts.
import type { AppRequest, AppRoute } from './context.js';
import { ownedRecord } from './owned.js';
import { randomBytes } from 'node:crypto';
import { ApiError } from '../core/errors.js';
import { json, empty } from './reply.js';
import type { JobEdit, JobRecord } from '../store/types.js';
import type { LogLevel } from '../core/run-context.js';
import { checkedProcessOf, ownMembers } from './processes.js';
import { ignoredMembersMessage, processDefaults, requestOptions, resolveOptions } from '../core/processing-options.js';
import { levelRank } from '../store/logs.js';
import { logLevelMember, textMember } from './members.js';
import { checkBilling } from './result.js';
import { paginate, type Link } from './paging.js';
import { DEFAULT_PLAN } from './capabilities.js';
import { jobLogOwner, type JobFields } from '../jobs/service.js';
import { logsReply } from './logs.js';
import { estimateJob } from '../jobs/estimate.js';

/** The job of the path, if it is the user's. */
export const jobOf = (req: AppRequest): Promise<JobRecord> => ownedRecord(req, 'job_id', 'JobNotFound', (id) => req.app.store.jobs.get(req.me.id, id));

/** A job as the API shows it; lists leave out the process. */
export function jobJson(req: AppRequest, job: JobRecord, full: boolean): Record<string, unknown> {
  const links: Link[] = [{ rel: 'monitor', href: req.url(`/jobs/${job.id}/logs`), type: 'application/json', title: 'Logs of the job' }];
  if (job.status === 'finished' || job.status === 'canceled' || job.status === 'error') {
    links.push({ rel: 'result', href: req.url(`/jobs/${job.id}/results`), type: 'application/json', title: 'Results of the job' });
  }
  return {
    id: job.id,
    title: job.title,
    description: job.description,
    ...(full ? { process: job.process } : {}),
    status: job.status,
    progress: job.progress,
    created: job.created,
    updated: job.updated,
    // API 1.3.0's timeline; earlier versions allow the extra members.
    ...(job.queued ? { queued: job.queued } : {}),
    ...(job.started ? { started: job.started } : {}),
    ...(job.unpublished ? { unpublished: job.unpublished } : {}),
    plan: job.plan,
    costs: job.costs,
    budget: job.budget,
    ...(job.usage ? { usage: job.usage } : {}),
    log_level: job.logLevel,
    // The processing parameters its requests set (GET /processing_parameters), as they were given.
    ...(full ? job.options : {}),
    links,
  };
}

const invalid = (property: string, reason: string) => new ApiError('PropertyInvalid', { property, reason });

const text = (body: Record<string, unknown>, k: string) => textMember(body, k, invalid);
/** `log_level`; absent or null is the default. */
const logLevelOf = (v: unknown): LogLevel => (v === undefined || v === null ? 'info' : logLevelMember(v, 'log_level', invalid));

/** Members of a job request of its own; any other top-level member is a processing parameter or ignored. */
const OWN = ['title', 'description', 'process', 'plan', 'budget', 'log_level'];

/**
 * The log level of a job: the request's `log_level` when it has one (even null: then the default),
 * else the default its processes give, else info.
 */
function jobLogLevel(req: AppRequest, body: Record<string, unknown>, process: Record<string, unknown>, userProcesses: Parameters<typeof processDefaults>[2]): LogLevel {
  if ('log_level' in body) return logLevelOf(body.log_level);
  return resolveOptions(req.app.processing.job, {}, processDefaults('job', process, userProcesses)).log_level as LogLevel;
}

/** Members PATCH may change besides processing parameters. */
const EDITABLE = new Set(['title', 'description', 'process', 'process_graph', 'plan', 'budget', 'log_level']);

/** Members of a job (the API's batch job) that no request changes; other unknown members are ignored. */
const READ_ONLY = new Set(['id', 'status', 'progress', 'created', 'updated', 'costs', 'usage', 'links']);

/** Names the members a request about job `id` gave and Xeo ignored, as a warning of the job's log (when its level keeps warnings). */
async function warnIgnored(req: AppRequest, id: string, logLevel: LogLevel, ignored: string[]): Promise<void> {
  if (ignored.length && levelRank('warning') <= levelRank(logLevel)) await req.app.store.logs.append(jobLogOwner(id), { level: 'warning', message: ignoredMembersMessage('job', ignored) });
}

export const routes: AppRoute[] = [
  {
    method: 'GET',
    path: '/jobs',
    summary: 'Your batch jobs',
    auth: 'required',
    handler: async (req) => {
      const repo = req.app.store.jobs;
      const { items, links } = await paginate(
        req,
        (after, n) => repo.list(req.me.id, after, n),
        (j) => j.id,
      );
      return json({ jobs: items.map((j) => jobJson(req, j, false)), links });
    },
  },
  {
    method: 'POST',
    path: '/jobs',
    summary: 'Create a batch job',
    auth: 'required',
    body: 'json',
    status: 201,
    handler: async (req) => {
      const body = await req.jsonObject();
      const held = await req.app.store.jobs.count(req.me.id);
      if (held >= req.app.config.maxJobsPerUser) throw new ApiError('JobQuotaExceeded', { jobs: held });
      const { options, ignored } = requestOptions(req.app.processing.job, body, ownMembers(body, OWN));
      const { process, userProcesses } = await checkedProcessOf(req, body);
      checkBilling(body);
      const fields: JobFields = {
        title: text(body, 'title'),
        description: text(body, 'description'),
        process,
        plan: DEFAULT_PLAN,
        budget: typeof body.budget === 'number' ? body.budget : null,
        logLevel: jobLogLevel(req, body, process, userProcesses),
        options,
      };
      // 128 random bits: the id cannot be guessed.
      const id = `j-${randomBytes(16).toString('hex')}`;
      await req.app.jobs.create(id, req.me.id, fields);
      await warnIgnored(req, id, fields.logLevel, ignored);
      return empty(201, { Location: req.url(`/jobs/${id}`), [`${req.app.brandWord}-Identifier`]: id });
    },
  },
  {
    method: 'GET',
    path: '/jobs/{job_id}',
    summary: 'One batch job',
    auth: 'required',
    handler: async (req) => json(jobJson(req, await jobOf(req), true)),
  },
  {
    method: 'PATCH',
    path: '/jobs/{job_id}',
    summary: 'Change a batch job (not while it is queued or running)',
    auth: 'required',
    body: 'json',
    status: 204,
    handler: async (req) => {
      const job = await jobOf(req);
      const body = await req.jsonObject();
      for (const k of Object.keys(body)) if (READ_ONLY.has(k)) throw new ApiError('PropertyNotEditable', { property: k });
      const { options, ignored } = requestOptions(req.app.processing.job, body, EDITABLE);
      // An update that changes nothing succeeds as a no-op, also on a job locked for edits.
      if (Object.keys(body).length === ignored.length) {
        await warnIgnored(req, job.id, job.logLevel, ignored);
        return empty(204);
      }
      if (job.status === 'queued' || job.status === 'running') throw new ApiError('JobLocked');
      checkBilling(body);
      const change: JobEdit = {};
      if ('title' in body) change.title = text(body, 'title');
      if ('description' in body) change.description = text(body, 'description');
      if (body.process !== undefined || body.process_graph !== undefined) change.process = (await checkedProcessOf(req, body)).process;
      if (Object.keys(options).length) change.options = { ...job.options, ...options };
      // A null plan keeps the plan; a null budget means no limit.
      if (typeof body.plan === 'string') change.plan = DEFAULT_PLAN;
      if ('budget' in body) change.budget = typeof body.budget === 'number' ? body.budget : null;
      if ('log_level' in body) change.logLevel = logLevelOf(body.log_level);
      // The status does not change; results of an earlier run stay until the job is started again.
      // Started since it was read: locked after all.
      if (!(await req.app.store.jobs.edit(job.id, change))) throw new ApiError('JobLocked');
      await warnIgnored(req, job.id, change.logLevel ?? job.logLevel, ignored);
      return empty(204);
    },
  },
  {
    method: 'DELETE',
    path: '/jobs/{job_id}',
    summary: 'Delete a batch job, stopping it and deleting its results',
    auth: 'required',
    status: 204,
    handler: async (req) => {
      await req.app.jobs.remove(await jobOf(req));
      return empty(204);
    },
  },
  {
    method: 'GET',
    path: '/jobs/{job_id}/estimate',
    summary: 'Costs, duration and size a batch job is expected to take',
    auth: 'required',
    handler: async (req) => {
      const { values: _values, ...estimate } = await estimateJob(await jobOf(req), req.app.store, req.app.compute, req.app.config, req.app.remoteProcesses);
      return json(estimate);
    },
  },
  {
    method: 'GET',
    path: '/jobs/{job_id}/logs',
    summary: 'Log of a batch job',
    auth: 'required',
    handler: async (req) => {
      const job = await jobOf(req);
      return logsReply(req, jobLogOwner(job.id), job.logLevel);
    },
  },
];

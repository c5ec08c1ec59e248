// Secondary web services (XYZ tiles, WMTS): create, list, read, change, delete, and their logs.
// Tiles themselves are served by the public routes of api/tiles.ts.
import type { AppRequest, AppRoute } from './context.js';
import { ownedRecord } from './owned.js';
import { randomBytes } from 'node:crypto';
import type { ServiceRecord, ServiceUsage } from '../store/types.js';
import { ApiError } from '../core/errors.js';
import { json, empty } from './reply.js';
import { paginate } from './paging.js';
import { checkedProcessOf, ownMembers } from './processes.js';
import { ignoredMembersMessage, processDefaults, requestOptions, resolveOptions } from '../core/processing-options.js';
import { levelRank } from '../store/logs.js';
import type { LogLevel } from '../core/run-context.js';
import type { Graph } from '../core/graph.js';
import { checkBilling } from './result.js';
import { costsOf } from '../compute/costs.js';
import { DEFAULT_PLAN } from './capabilities.js';
import { logsReply } from './logs.js';
import { logLevelMember, textMember } from './members.js';
import { checkConfiguration, serviceParameterNames, serviceTypeName } from '../tiles/service-types.js';
import { serviceLogOwner } from '../tiles/activity.js';
import { userProcessesOf } from '../graph/user-processes.js';

/** Members PATCH may change besides processing parameters. */
const EDITABLE = new Set(['title', 'description', 'process', 'process_graph', 'enabled', 'configuration', 'parameters', 'plan', 'budget', 'log_level']);

/** Members of a service (the API's secondary web service) that no request changes; other unknown members are ignored. */
const READ_ONLY = new Set(['id', 'url', 'type', 'attributes', 'created', 'costs', 'usage', 'links']);

/** Names the members a request about service `id` gave and Xeo ignored, as a warning of the service's log (when its level keeps warnings). */
async function warnIgnored(req: AppRequest, id: string, logLevel: LogLevel, ignored: string[]): Promise<void> {
  if (ignored.length && levelRank('warning') <= levelRank(logLevel)) await req.app.store.logs.append(serviceLogOwner(id), { level: 'warning', message: ignoredMembersMessage('service', ignored) });
}

/** Members of a service request of its own; any other top-level member is a processing parameter or ignored. */
const OWN = ['title', 'description', 'process', 'type', 'enabled', 'configuration', 'parameters', 'plan', 'budget', 'log_level'];

/** The configuration the body gives (`parameters` is the interface spec's older name). */
const givenConfiguration = (body: Record<string, unknown>) => body.configuration ?? body.parameters;

/**
 * A configuration with its tile size: its own `tile_size` when the request's configuration gives
 * one, else the processing parameter (the request's, else the processes' default, else 256).
 */
function withTileSize(configuration: Record<string, unknown>, given: unknown, options: Record<string, unknown>): Record<string, unknown> {
  const explicit = given !== null && typeof given === 'object' && 'tile_size' in given;
  return explicit ? configuration : { ...configuration, tile_size: options.tile_size };
}

/** Where a service is reached: an XYZ URL template, or the WMTS endpoint. */
export function serviceUrl(req: AppRequest, s: Pick<ServiceRecord, 'id' | 'type' | 'configuration'>): string {
  const root = req.app.publicUrl();
  if (s.type === 'WMTS') return `${root}/wmts/${s.id}`;
  const ext = s.configuration.format === 'jpeg' ? 'jpg' : 'png';
  return `${root}/xyz/${s.id}/{z}/{x}/{y}.${ext}`;
}

function usageOf(u: ServiceUsage) {
  return {
    cpu: { value: Math.round(u.cpuMs) / 1000, unit: 'cpu-seconds' },
    tiles: { value: u.tiles, unit: 'tiles' },
    tiles_from_cache: { value: u.cacheHits, unit: 'tiles' },
    input: { value: u.valuesRead, unit: 'raster values' },
  };
}

/** The API form of a service; lists leave out process, configuration and attributes. */
function present(req: AppRequest, s: ServiceRecord & { usage: ServiceUsage }, full: boolean) {
  const out: Record<string, unknown> = {
    id: s.id,
    title: s.title,
    description: s.description,
    url: serviceUrl(req, s),
    type: s.type,
    enabled: s.enabled,
  };
  if (full) {
    out.process = s.process;
    out.configuration = s.configuration;
    out.attributes = s.attributes;
    // The processing parameters its requests set (GET /processing_parameters), as they were given.
    Object.assign(out, s.options ?? {});
  }
  Object.assign(out, {
    created: s.created,
    plan: s.plan,
    costs: costsOf(s.usage.valuesRead),
    budget: s.budget,
    usage: usageOf(s.usage),
    log_level: s.logLevel,
    links: [
      { rel: 'self', href: req.url(`/services/${s.id}`), type: 'application/json' },
      { rel: 'alternate', href: `${req.app.publicUrl()}/viewer?service=${s.id}`, type: 'text/html', title: 'The service on a map' },
      { rel: 'monitor', href: req.url(`/services/${s.id}/logs`), type: 'application/json', title: 'Logs of the service' },
    ],
  });
  return out;
}

const invalid = (member: string, reason: string) => new ApiError('ServiceConfigInvalid', { parameter: member, reason });

const text = (body: Record<string, unknown>, k: string) => textMember(body, k, invalid);
/** The process of a body, checked (the service type's parameters are declared for it), with the processes it calls. */
const processOf = (req: AppRequest, body: Record<string, unknown>, type: string) => checkedProcessOf(req, body, serviceParameterNames(type));
const logLevelOf = (v: unknown) => logLevelMember(v, 'log_level', invalid);

const owned = (req: AppRequest) => ownedRecord(req, 'service_id', 'ServiceNotFound', (id) => req.app.store.services.get(id));

export const routes: AppRoute[] = [
  {
    method: 'GET',
    path: '/services',
    summary: 'Your secondary web services',
    auth: 'required',
    handler: async (req) => {
      const repo = req.app.store.services;
      const { items, links } = await paginate(
        req,
        (after, n) => repo.list(req.me.id, after, n),
        (s) => s.id,
      );
      return json({ services: items.map((s) => present(req, s, false)), links });
    },
  },
  {
    method: 'POST',
    path: '/services',
    summary: 'Create a secondary web service',
    auth: 'required',
    body: 'json',
    status: 201,
    handler: async (req) => {
      const body = await req.jsonObject();
      if (body.type === undefined || body.type === null) throw new ApiError('ServiceUnsupported', { type: '' }, 'A service needs a `type`: one of those GET /service_types lists.');
      const type = serviceTypeName(body.type);
      // `parameters` is the interface spec's older name of `configuration`.
      const configured = checkConfiguration(type, givenConfiguration(body));
      const { options: given, ignored } = requestOptions(req.app.processing.service, body, ownMembers(body, OWN));
      checkBilling(body);
      if (body.enabled !== undefined && typeof body.enabled !== 'boolean') throw invalid('enabled', 'true or false is expected');
      const { process, userProcesses } = await processOf(req, body, type);
      const options = resolveOptions(req.app.processing.service, given, processDefaults('service', process, userProcesses));
      const configuration = withTileSize(configured, givenConfiguration(body), options);
      const now = new Date().toISOString();
      const record: ServiceRecord = {
        id: randomBytes(16).toString('base64url'),
        userId: req.me.id,
        type,
        enabled: body.enabled ?? true,
        title: text(body, 'title'),
        description: text(body, 'description'),
        process,
        configuration,
        attributes: {},
        options: given,
        plan: DEFAULT_PLAN,
        budget: typeof body.budget === 'number' ? body.budget : null,
        logLevel: 'log_level' in body ? (body.log_level === null ? 'info' : logLevelOf(body.log_level)) : (options.log_level as LogLevel),
        created: now,
        updated: now,
      };
      await req.app.store.services.create(record);
      // Its warm-up starts now, from the graph at hand: a map asks for the first tile the moment it has the 201.
      req.app.tiles.prepare(record.id, record.enabled ? (record.process.process_graph as Graph) : undefined);
      await req.app.store.logs.append(serviceLogOwner(record.id), { level: 'info', message: `${type} service created` });
      await warnIgnored(req, record.id, record.logLevel, ignored);
      return empty(201, { Location: req.url(`/services/${record.id}`), [`${req.app.brandWord}-Identifier`]: record.id });
    },
  },
  {
    method: 'GET',
    path: '/services/{service_id}',
    summary: 'One secondary web service',
    auth: 'required',
    handler: async (req) => json(present(req, await owned(req), true)),
  },
  {
    method: 'PATCH',
    path: '/services/{service_id}',
    summary: 'Change a secondary web service',
    auth: 'required',
    body: 'json',
    status: 204,
    handler: async (req) => {
      const current = await owned(req);
      const body = await req.jsonObject();
      for (const k of Object.keys(body)) if (READ_ONLY.has(k)) throw new ApiError('PropertyNotEditable', { property: k });
      const { options: given, ignored } = requestOptions(req.app.processing.service, body, EDITABLE);
      const keys = Object.keys(body).filter((k) => !ignored.includes(k));
      // An update that changes nothing succeeds as a no-op.
      if (keys.length === 0) {
        await warnIgnored(req, current.id, current.logLevel, ignored);
        return empty(204);
      }
      const next: ServiceRecord = { ...current, options: { ...current.options, ...given }, updated: new Date().toISOString() };
      if ('title' in body) next.title = text(body, 'title');
      if ('description' in body) next.description = text(body, 'description');
      if ('enabled' in body) {
        if (typeof body.enabled !== 'boolean') throw invalid('enabled', 'true or false is expected');
        next.enabled = body.enabled;
      }
      const checked = 'process' in body || 'process_graph' in body ? await processOf(req, body, current.type) : null;
      if (checked) next.process = checked.process;
      // A new configuration takes its tile size as a new service would; a tile_size of the request
      // alone sets it; a change of the process alone keeps it.
      if ('configuration' in body || 'parameters' in body) {
        const configured = checkConfiguration(current.type, givenConfiguration(body));
        const userProcesses = checked?.userProcesses ?? (await userProcessesOf(req.app.store.processGraphs, req.app.remoteProcesses, req.me.id, next.process.process_graph));
        next.configuration = withTileSize(configured, givenConfiguration(body), resolveOptions(req.app.processing.service, next.options ?? {}, processDefaults('service', next.process, userProcesses)));
      } else if ('tile_size' in given) {
        next.configuration = { ...next.configuration, tile_size: given.tile_size };
      }
      checkBilling(body);
      // plan: null keeps the plan; budget: null removes the limit.
      if ('budget' in body) next.budget = typeof body.budget === 'number' ? body.budget : null;
      if ('log_level' in body) next.logLevel = logLevelOf(body.log_level);
      await req.app.store.services.update(next);
      await req.app.changes.publish('service', current.id);
      req.app.tiles.prepare(current.id);
      const changed = keys.join(', ');
      await req.app.store.logs.append(serviceLogOwner(current.id), { level: 'info', message: `service changed: ${changed}` });
      await warnIgnored(req, current.id, next.logLevel, ignored);
      return empty(204);
    },
  },
  {
    method: 'DELETE',
    path: '/services/{service_id}',
    summary: 'Delete a secondary web service',
    auth: 'required',
    status: 204,
    handler: async (req) => {
      const s = await owned(req);
      await req.app.store.services.delete(s.id);
      await req.app.store.logs.deleteOwner(serviceLogOwner(s.id));
      req.app.tiles.activity.forget(s.id);
      await req.app.changes.publish('service', s.id);
      return empty(204);
    },
  },
  {
    method: 'GET',
    path: '/services/{service_id}/logs',
    summary: 'Logs of a secondary web service',
    auth: 'required',
    handler: async (req) => {
      const s = await owned(req);
      await req.app.tiles.activity.flush(s.id);
      return logsReply(req, serviceLogOwner(s.id), s.logLevel);
    },
  },
];

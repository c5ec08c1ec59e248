// The commands of `xeo` (src/cli.ts is the entry): serve the API, and manage basic-auth users.
// Configuration comes from the environment (docs/configuration.md, or `xeo settings`), the same
// for every command.
import { existsSync, watchFile } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfig, ConfigError } from './core/config.js';
import { SETTINGS, settingsTable } from './core/settings.js';
import { log, loggingSettings } from './core/log.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { startWorker, startXeo } from './main.js';
import { openStore } from './store/db.js';
import { hashPassword } from './auth/password.js';
import { announceUserGone, revokeToken, revokeUserTokens } from './auth/revoke.js';
import { PgChanges, type ChangeFeed } from './store/changes.js';
import type { Config } from './core/config.js';
import { wellKnownPath } from './api/well-known.js';
import { migrateInstallation } from './ingest/migrate.js';
import { RasterFormatError } from './data/raster-format-error.js';
import { RemoteError } from './data/http-client.js';
import { OutboundRefused } from './data/outbound.js';
import path from 'node:path';
import { describeStacCollection } from './data/stac-collections.js';
import { StacApiError } from './data/stac-api.js';
import { SIGNERS, type SignerName } from './data/stac-signers.js';

const USAGE = `Usage: xeo <command>

Commands:
  serve                                  start the API server
  worker                                 run batch job tasks from the queue (XEO_REDIS_URL)
  migrate FROM_DATA_DIR                  move an embedded installation's records (and, with
                                         XEO_S3_BUCKET, its files and results) to XEO_DATABASE_URL
  users add NAME [--password PASSWORD]   add a user (password read from stdin when not given)
  users passwd NAME [--password PASSWORD] set a user's password
  users list                             list users
  users delete NAME                      delete a user and their records (their tokens too)
  tokens revoke TOKEN|JTI                revoke one access token (the token itself, or its jti)
  tokens revoke --user NAME              revoke every access token of a user
  import PATH... --collection ID [--bands B1,B2] [--date YYYY-MM-DD] [--title T] [--license L]
                                         create or extend a collection from GeoTIFFs or STAC Item JSON
  collections add-stac API_URL REMOTE_ID [--id ID] [--title T] [--max-items N]
                       [--signer none|planetary-computer|s3]
                                         add a collection whose items are searched in a STAC API
  collections list                       list collections (imported or STAC API)
  collections remove ID                  remove a collection (files are not deleted)
  settings [--into FILE]                 print every setting (XEO_* variable) with its default and
                                         meaning as a markdown table, or write it into FILE between
                                         the lines <!-- settings:begin --> and <!-- settings:end -->

Configuration is read from XEO_* environment variables; see docs/configuration.md.`;

const USER_NAME = /^[\w\-.]{1,64}$/;

async function readPassword(given: string | undefined): Promise<string> {
  if (given !== undefined) return given;
  if (process.stdin.isTTY) process.stderr.write('Password: ');
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) {
    chunks.push(c as Buffer);
    if (process.stdin.isTTY && String(c).includes('\n')) break;
  }
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

async function migrate(args: string[]): Promise<void> {
  const [from, ...extra] = args;
  if (!from || extra.length) throw new UsageError(`migrate takes the data dir of the embedded installation\n\n${USAGE}`);
  if (!existsSync(path.join(from, 'xeo.sqlite'))) throw new UsageError(`${from} holds no xeo.sqlite: give the XEO_DATA_DIR of the embedded installation`);
  const config = loadConfig();
  await migrateInstallation(path.resolve(from), config, (line) => console.log(line));
}

/** A line of `serve` or `worker` about the process itself: as it was in the readable form, a log line in JSON. */
function say(line: string): void {
  if (loggingSettings().format === 'json') log.info(line);
  else console.log(line);
}

async function worker(): Promise<void> {
  const config = loadConfig();
  const w = await startWorker(config);
  if (w.metricsPort !== null) say(`Metrics, health and readiness on http://${hostPart(config.host)}:${w.metricsPort}`);
  say(`Xeo worker ${w.node} ready: ${config.jobThreads} job thread(s) on the queue of ${redacted(config.redisUrl!)}`);
  stopOnSignals(() => w.stop());
}

/**
 * SIGINT or SIGTERM: an orderly stop (the node drains), then exit 0; a second signal while it
 * drains ends the process at once (exit 1).
 */
function stopOnSignals(stop: () => Promise<void>): void {
  let stopping = false;
  const once = (signal: string) => {
    if (stopping) {
      log.warn(`${signal} again while stopping: exiting now`);
      log.flush();
      process.exit(1);
    }
    stopping = true;
    log.info(`${signal} received`);
    stop().then(
      () => {
        log.flush();
        process.exit(0);
      },
      (e: unknown) => {
        log.error('the orderly stop failed', { err: e });
        log.flush();
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => once('SIGINT'));
  process.on('SIGTERM', () => once('SIGTERM'));
}

const hostPart = (host: string) => (host.includes(':') ? `[${host}]` : host);

/** `xeo settings`: the table of docs/configuration.md, printed or written into a file between its markers. */
function settings(args: string[]): void {
  const { values } = parseArgs({ args, options: { into: { type: 'string' } } });
  const table = settingsTable();
  if (!values.into) {
    process.stdout.write(table);
    return;
  }
  const text = readFileSync(values.into, 'utf8');
  const m = /(<!-- settings:begin -->\n)[\s\S]*?(<!-- settings:end -->)/.exec(text);
  if (!m) throw new UsageError(`${values.into} has no <!-- settings:begin --> ... <!-- settings:end --> section`);
  writeFileSync(values.into, text.slice(0, m.index) + m[1] + table + m[2] + text.slice(m.index + m[0].length));
  console.log(`wrote ${Object.keys(SETTINGS).length} settings into ${values.into}`);
}

/** A URL without its password, for the log. */
function redacted(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

async function serve(): Promise<void> {
  const config = loadConfig();
  const xeo = await startXeo(config);
  const pub = xeo.url === xeo.localUrl ? '' : `public URL ${xeo.url}, `;
  // The listening line comes last: scripts take it as the sign that everything is up.
  if (xeo.metricsPort !== null) say(`Metrics, health and readiness on http://${hostPart(config.host)}:${xeo.metricsPort}`);
  say(`Xeo listening on ${xeo.localUrl} (${pub}versions: ${xeo.url}${wellKnownPath(config.brand)})`);
  if (xeo.redirectPort !== null) say(`Redirecting http://${config.host}:${xeo.redirectPort} to HTTPS`);
  if (config.tls) {
    // A renewed certificate is taken without a restart: on SIGHUP, or when its files change.
    const reload = (why: string) =>
      xeo.reloadTls().then(
        () => log.info(`certificate reloaded (${why})`),
        (e) => log.error(`certificate reload failed: ${(e as Error).message}`),
      );
    process.on('SIGHUP', () => void reload('SIGHUP'));
    let timer: NodeJS.Timeout | null = null;
    for (const f of [config.tls.cert, config.tls.key]) {
      watchFile(f, { interval: 1000 }, () => {
        if (timer) clearTimeout(timer);
        timer = setTimeout(() => void reload('files changed'), 500);
      });
    }
  }
  stopOnSignals(() => xeo.stop());
}

async function users(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, options: { password: { type: 'string' } }, allowPositionals: true });
  const [action, name] = positionals;
  const config = loadConfig();
  const store = await openStore(config);
  try {
    switch (action) {
      case 'add':
      case 'passwd': {
        if (!name || !USER_NAME.test(name)) throw new UsageError('NAME must be 1 to 64 letters, digits, _, - or .');
        const password = await readPassword(values.password);
        if (password.length < 1) throw new UsageError('the password must not be empty');
        const hash = await hashPassword(password);
        if (action === 'add') {
          if (await store.users.byId(name)) throw new UsageError(`user '${name}' exists already`);
          await store.users.create({ id: name, name, passwordHash: hash, oidcIssuer: null, oidcSubject: null, quotaBytes: null });
          console.log(`added user ${name}`);
        } else {
          if (!(await store.users.byId(name))) throw new UsageError(`there is no user '${name}'`);
          await store.users.setPassword(name, hash);
          // A new password ends the sessions of the old one.
          const n = await withFeed(config, (feed) => revokeUserTokens(store, feed, name));
          console.log(`changed the password of ${name} (${n} access token(s) revoked)`);
        }
        return;
      }
      case 'list':
        for (const u of await store.users.list()) console.log(`${u.id}\t${u.oidcIssuer ? `oidc ${u.oidcIssuer}` : 'basic'}\t${u.created}`);
        return;
      case 'delete':
        if (!name || !(await store.users.delete(name))) throw new UsageError(`there is no user '${name ?? ''}'`);
        await withFeed(config, (feed) => announceUserGone(feed, name));
        console.log(`deleted user ${name}`);
        return;
      default:
        throw new UsageError(USAGE);
    }
  } finally {
    await store.close();
  }
}

/** Runs `fn` with the change feed of the nodes sharing a database server (none for an embedded installation). */
async function withFeed<T>(config: Config, fn: (feed: ChangeFeed | null) => Promise<T>): Promise<T> {
  const feed = config.databaseUrl ? new PgChanges(config.databaseUrl, config.database.timeoutMs) : null;
  try {
    return await fn(feed);
  } finally {
    await feed?.close();
  }
}

async function tokensCommand(args: string[]): Promise<void> {
  // A token or jti may begin with '-' (base64url): one argument after `revoke` is always the token.
  const single = args.length === 2 && args[0] === 'revoke' && args[1] !== '--user' && !args[1].startsWith('--user=');
  const { values, positionals } = single ? { values: { user: undefined }, positionals: args } : parseArgs({ args, options: { user: { type: 'string' } }, allowPositionals: true });
  const [action, given, ...extra] = positionals;
  if (action !== 'revoke' || extra.length || (given === undefined) === (values.user === undefined)) throw new UsageError('usage: tokens revoke TOKEN|JTI, or tokens revoke --user NAME');
  const config = loadConfig();
  const store = await openStore(config);
  try {
    if (values.user !== undefined) {
      if (!(await store.users.byId(values.user))) throw new UsageError(`there is no user '${values.user}'`);
      const n = await withFeed(config, (feed) => revokeUserTokens(store, feed, values.user!));
      console.log(`revoked ${n} access token(s) of ${values.user}`);
    } else {
      const was = await withFeed(config, (feed) => revokeToken(store, feed, given));
      console.log(was ? 'revoked the token' : 'no live token matches (unknown, expired or revoked already)');
    }
  } finally {
    await store.close();
  }
}

async function importCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      collection: { type: 'string' },
      bands: { type: 'string' },
      date: { type: 'string' },
      title: { type: 'string' },
      description: { type: 'string' },
      license: { type: 'string' },
    },
    allowPositionals: true,
  });
  if (!values.collection) throw new UsageError('give the collection id with --collection ID');
  // The readers of GeoTIFFs and STAC Items load here, for this command only.
  const [{ importFiles }, { ImportError }] = await Promise.all([import('./ingest/import.js'), import('./data/items.js')]);
  const store = await openStore(loadConfig());
  try {
    const { collection, items } = await importFiles(store, positionals, {
      collection: values.collection,
      bands: values.bands?.split(',').map((b) => b.trim()),
      date: values.date,
      title: values.title,
      description: values.description,
      license: values.license,
      progress: progressBar,
    });
    console.log(`imported ${items} item(s) into ${collection.id} (bands ${collection.bands.map((b) => b.name).join(', ')}; EPSG:${collection.epsg})`);
  } catch (e) {
    if (e instanceof ImportError || e instanceof RasterFormatError || e instanceof RemoteError || e instanceof OutboundRefused) throw new UsageError(e.message);
    throw e;
  } finally {
    await store.close();
  }
}

async function collectionsCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    options: { id: { type: 'string' }, title: { type: 'string' }, 'max-items': { type: 'string' }, signer: { type: 'string' } },
    allowPositionals: true,
  });
  const [action, ...rest] = positionals;
  const store = await openStore(loadConfig());
  try {
    switch (action) {
      case 'add-stac': {
        const [apiUrl, remoteId] = rest;
        if (!apiUrl || !remoteId || rest.length > 2) throw new UsageError('usage: collections add-stac API_URL REMOTE_ID [--id ID] [--title T] [--max-items N] [--signer none|planetary-computer|s3]');
        if (!/^https?:\/\/[^/]+/i.test(apiUrl)) throw new UsageError(`the STAC API URL must be an absolute http(s) URL, got '${apiUrl}'`);
        const signer = values.signer ?? 'none';
        if (!(SIGNERS as readonly string[]).includes(signer)) throw new UsageError(`--signer must be one of ${SIGNERS.join(', ')}, got '${signer}'`);
        let maxItems: number | null = null;
        if (values['max-items'] !== undefined) {
          maxItems = Number(values['max-items']);
          if (!Number.isSafeInteger(maxItems) || maxItems < 1) throw new UsageError(`--max-items must be a whole number >= 1, got '${values['max-items']}'`);
        }
        const id = values.id ?? remoteId;
        const existing = await store.collections.get(id);
        if (existing && !existing.remote) throw new UsageError(`collection '${id}' exists and holds imported items; choose another id with --id`);
        let meta;
        try {
          meta = await describeStacCollection(apiUrl, remoteId, { id, title: values.title, maxItems, signer: signer as SignerName });
        } catch (e) {
          if (e instanceof StacApiError) throw new UsageError(`cannot add the collection: ${e.message}`);
          throw e;
        }
        await store.collections.put(meta);
        const names = meta.bands.map((b) => (b.common_name && b.common_name !== b.name ? `${b.name} (${b.common_name})` : b.name));
        console.log(
          `${existing ? 'updated' : 'added'} ${meta.id}: ${remoteId} of ${meta.remote!.api} (bands ${names.join(', ')}; signer ${signer}; ${maxItems ? `at most ${maxItems} items per load` : 'default item caps'})`,
        );
        return;
      }
      case 'list':
        for (const c of await store.collections.list()) {
          if (c.remote) console.log(`${c.id}\tstac-api ${c.remote.api} ${c.remote.collection}\tsigner ${c.remote.signer}\t${c.remote.maxItems ?? 'default'} items\t${c.title}`);
          else console.log(`${c.id}\timported ${(await store.collections.stats(c.id)).count} items\t\t\t${c.title}`);
        }
        return;
      case 'remove': {
        const [id] = rest;
        if (!id || !(await store.collections.delete(id))) throw new UsageError(`there is no collection '${id ?? ''}'`);
        console.log(`removed collection ${id}`);
        return;
      }
      default:
        throw new UsageError(USAGE);
    }
  } finally {
    await store.close();
  }
}

/** One line on stderr, redrawn in place on a terminal. */
function progressBar(done: number, total: number, name: string): void {
  const width = 30;
  const filled = Math.round((done / total) * width);
  const line = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} ${path.basename(name)}`;
  if (process.stderr.isTTY) process.stderr.write(`\r${line.slice(0, process.stderr.columns - 1)}${done === total ? '\n' : ''}`);
  else process.stderr.write(`${line}\n`);
}

class UsageError extends Error {}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === 'serve') return serve();
  if (command === 'worker') return worker();
  if (command === 'migrate') return migrate(rest);
  if (command === 'users') return users(rest);
  if (command === 'tokens') return tokensCommand(rest);
  if (command === 'import') return importCommand(rest);
  if (command === 'collections') return collectionsCommand(rest);
  if (command === 'settings') return settings(rest);
  if (command === 'help' || command === '--help' || command === '-h' || command === undefined) {
    console.log(USAGE);
    return;
  }
  throw new UsageError(`unknown command '${command}'\n\n${USAGE}`);
}

main(process.argv.slice(2)).catch((e) => {
  const expected = e instanceof UsageError || e instanceof ConfigError;
  console.error(`xeo: ${expected ? e.message : ((e as Error).stack ?? e)}`);
  process.exit(expected ? 2 : 1);
});

// The ladder of src/: its folders (and the two top-level files) bottom to top, one rung each, with
// what each holds. test/layers.test.ts holds the code to it (an import only points down, or within
// its folder), and the ladder of docs/architecture.md is generated from it and checked:
// `npm run docs:ladder` writes it between the lines <!-- ladder:begin --> and <!-- ladder:end -->.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface Rung {
  /** A folder under src/, or a file directly in it. */
  name: string;
  /** What it holds, in a line or two. */
  holds: string;
}

/** Bottom to top; a file may import its own rung or any rung below. */
export const RUNGS: readonly Rung[] = [
  {
    name: 'core',
    holds:
      'the words every layer shares: typed API errors and their catalogue, settings and config, grids, catalogue records, the run context (and EngineParts), the graph model, the logger, the metrics counters',
  },
  { name: 'process-catalog', holds: 'every offered process as data: its facts (schemas.json), our texts, what parameters accept, kernel lowerings; no implementation, so the main thread reads it' },
  { name: 'ml', holds: 'machine learning without I/O: random-forest training (CART on binned predictors), the forest and its file format, the per-thread model cache' },
  { name: 'geometry', holds: 'CRS (proj4), WKT and WKB, geometry columns: the floor of raster and vector data alike' },
  { name: 'wasm', holds: "the WebAssembly kernels' runtime (build/kernels.wasm) and the arena of their memory, one per thread" },
  { name: 'store', holds: 'SQLite or PostgreSQL (one SQL surface, migrations, a repository per record kind, change feed, slots); blob stores: local disk or S3' },
  { name: 'files', holds: "user workspaces (paths, quota) on the blob store; the bridge of users' files to engine threads" },
  { name: 'datacube', holds: 'the data cube model: cubes, pixel vectors, features and their properties, geometry operations, vector limits' },
  { name: 'data', holds: 'reading: deferred loads (the dry run) -> load -> COG reader and block cache -> HTTP under the outbound rules -> warp; STAC documents, APIs and searches; vector files' },
  { name: 'compile', holds: 'fuse (child graph -> Program) -> executor -> tier 0 (block VM) or tier 1 (codegen -> asc -> kernel cache), kernel helper threads' },
  { name: 'output', holds: 'every writer and encoder: COG (whole and streaming), PNG, JPEG, netCDF, vector formats, JSON, colour maps' },
  { name: 'udf', holds: "user-defined functions: the host (sandboxes, Python interpreters, AssemblyScript compiler) and an engine's link to it" },
  { name: 'graph', holds: 'validation (structure, schemas, limits), the evaluator, parameters, user and remote processes' },
  { name: 'processes', holds: 'the process library: definitions, our texts, implementations' },
  { name: 'auth', holds: 'basic (scrypt), tokens, OpenID Connect' },
  { name: 'engine', holds: 'one engine per thread: createEngine (caches, kernels, links, limits), execute() for /result, tiles and chunks, warm-up, the compute-thread entry' },
  { name: 'compute', holds: 'the main side of compute threads: the pool (503 when full), their ports and EngineHost, per-user slots (429), costs, sync logs' },
  { name: 'ingest', holds: 'the demo collection, `xeo import` of GeoTIFFs and STAC Items, `xeo migrate`' },
  { name: 'tiles', holds: 'tile grid, LRU tile cache, single flights, renderer, value ranges, WMTS, map page, collection previews' },
  { name: 'jobs', holds: 'batch jobs: service (status machine, queue, restarts), job threads and their runner (dry run -> chunks -> COG), signing, the Redis task queue and `xeo worker`' },
  { name: 'api', holds: 'the interface: one route table, request and reply types, version profiles, the app context, one thin module per area' },
  { name: 'server', holds: 'transport: uWS catch-all -> version -> route -> CORS, auth, bodies -> handler -> reply; the one error mapper; health, metrics, drain' },
  { name: 'main.ts', holds: 'wiring of the services of `xeo serve` and `xeo worker`' },
  { name: 'commands.ts', holds: 'the commands of `xeo`: serve, worker, migrate, import, users, tokens, collections, settings' },
  { name: 'cli.ts', holds: "the `xeo` entry: glibc's allocator set for `serve` and `worker` (core/allocator.ts), then the commands" },
];

/** The rung names, bottom to top. */
export const LAYERS: readonly string[] = RUNGS.map((r) => r.name);

/** The ladder as docs/architecture.md shows it: top rung first, one line each. */
export function ladderText(): string {
  const width = Math.max(...RUNGS.map((r) => `src/${r.name}`.length));
  const lines = [...RUNGS].reverse().map((r) => `${`src/${r.name}`.padEnd(width)}  ${r.holds}`);
  return ['```', ...lines, '```', ''].join('\n');
}

const BEGIN = '<!-- ladder:begin -->\n';
const END = '<!-- ladder:end -->';

/** The ladder written in `page` between its markers (which must be there). */
export function withLadder(page: string): string {
  const i = page.indexOf(BEGIN);
  const j = page.indexOf(END);
  if (i < 0 || j < i) throw new Error('the page has no <!-- ladder:begin --> ... <!-- ladder:end --> section');
  return page.slice(0, i + BEGIN.length) + ladderText() + page.slice(j);
}

// `node dist/test/support/ladder.js FILE` writes the ladder into FILE.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node dist/test/support/ladder.js FILE');
    process.exit(2);
  }
  writeFileSync(file, withLadder(readFileSync(file, 'utf8')));
}

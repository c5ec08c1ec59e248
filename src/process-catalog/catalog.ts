// The process catalogue: every predefined process this back-end offers, by id, as data: its
// definition (the facts of schemas.json in our words, spec.ts), the values its parameters accept
// beyond the definition (accepts.ts) and, where it compiles to a kernel instruction, its lowering
// (lowerings.ts).
// It imports no implementation, so the main thread (GET /processes, validation, estimates, chunking)
// reads it without loading the engine; engine threads join it to the implementations of
// src/processes/ (registry.ts there), and every offered process must have one.
//
// Adding a process: its facts come with schemas.json; its texts go into texts/<group>.ts (the group
// named like its implementation's file in src/processes/), its implementation into that file.
import type { ProcessSpec } from '../core/process.js';
import { specFor, type ProcessTexts } from './spec.js';
import { ACCEPTS, OMITTABLE } from './accepts.js';
import { argumentsOf, LOWERINGS, type Lowering } from './lowerings.js';
import { texts as math } from './texts/math.js';
import { texts as logic } from './texts/logic.js';
import { texts as arrays } from './texts/arrays.js';
import { texts as statistics } from './texts/statistics.js';
import { texts as texts } from './texts/texts.js';
import { texts as load } from './texts/cubes/load.js';
import { texts as filters } from './texts/cubes/filters.js';
import { texts as apply } from './texts/cubes/apply.js';
import { texts as dimensions } from './texts/cubes/dimensions.js';
import { texts as combine } from './texts/cubes/combine.js';
import { texts as aggregate } from './texts/cubes/aggregate.js';
import { texts as resample } from './texts/cubes/resample.js';
import { texts as climate } from './texts/cubes/climate.js';
import { texts as inspect } from './texts/cubes/inspect.js';
import { texts as polygon } from './texts/cubes/polygon.js';
import { texts as udf } from './texts/udf.js';
import { texts as zonal } from './texts/cubes/zonal.js';
import { texts as vectorLoad } from './texts/cubes/vector-load.js';
import { texts as vectorProcesses } from './texts/cubes/vector-processes.js';
import { texts as curves } from './texts/cubes/curves.js';
import { texts as spatialReduce } from './texts/cubes/spatial-reduce.js';
import { texts as flatten } from './texts/cubes/flatten.js';
import { texts as ml } from './texts/ml.js';

/** What the catalogue knows of one process. */
export interface ProcessEntry {
  spec: ProcessSpec;
  /** Values some parameters take beyond their definition's schema, by parameter name (accepts.ts). */
  accepts?: Record<string, unknown>;
  /** How the process compiles into the kernels' pixel programs; absent when it does not (lowerings.ts). */
  lowering?: Lowering;
  /** Required parameters a graph may leave out (OMITTABLE in accepts.ts). */
  omittable?: string[];
}

export class ProcessCatalog {
  private readonly byId = new Map<string, ProcessEntry>();

  constructor(groups: Record<string, ProcessTexts>[], accepts: Record<string, Record<string, unknown>>, lowerings: Record<string, Lowering>, omittable: Record<string, string[]> = {}) {
    for (const group of groups) {
      for (const [id, texts] of Object.entries(group)) {
        if (this.byId.has(id)) throw new Error(`process ${id} has texts twice`);
        this.byId.set(id, { spec: specFor(id, texts) });
      }
    }
    for (const [id, byParameter] of Object.entries(accepts)) {
      const entry = this.byId.get(id);
      if (!entry) throw new Error(`accepts.ts names process ${id}, which is not offered`);
      for (const name of Object.keys(byParameter)) {
        if (!entry.spec.parameters.some((p) => p.name === name)) throw new Error(`accepts.ts: process ${id} has no parameter ${name}`);
      }
      entry.accepts = byParameter;
    }
    for (const [id, lowering] of Object.entries(lowerings)) {
      const entry = this.byId.get(id);
      if (!entry) throw new Error(`lowerings.ts names process ${id}, which is not offered`);
      const named = [...argumentsOf(lowering), ...Object.keys(lowering.fixed ?? {}), ...(lowering.ignored ?? [])];
      for (const name of named) {
        if (!entry.spec.parameters.some((p) => p.name === name)) throw new Error(`lowerings.ts: process ${id} has no parameter ${name}`);
      }
      entry.lowering = lowering;
    }
    for (const [id, names] of Object.entries(omittable)) {
      const entry = this.byId.get(id);
      if (!entry) throw new Error(`OMITTABLE names process ${id}, which is not offered`);
      for (const name of names) {
        if (!entry.spec.parameters.some((p) => p.name === name)) throw new Error(`OMITTABLE: process ${id} has no parameter ${name}`);
      }
      entry.omittable = names;
    }
  }

  get(id: string): ProcessEntry | undefined {
    return this.byId.get(id);
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  /** The ids of all offered processes. */
  ids(): string[] {
    return [...this.byId.keys()];
  }

  /** Specs sorted by id (GET /processes). */
  specs(): ProcessSpec[] {
    return [...this.byId.values()].map((e) => e.spec).sort((a, b) => (a.id < b.id ? -1 : 1));
  }
}

export const processCatalog = new ProcessCatalog(
  [
    math,
    logic,
    arrays,
    statistics,
    texts,
    load,
    filters,
    apply,
    dimensions,
    combine,
    aggregate,
    resample,
    climate,
    inspect,
    polygon,
    udf,
    zonal,
    vectorLoad,
    vectorProcesses,
    curves,
    spatialReduce,
    flatten,
    ml,
  ],
  ACCEPTS,
  LOWERINGS,
  OMITTABLE,
);

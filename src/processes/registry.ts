// The predefined processes as engine threads run them: each process of the catalogue
// (src/process-catalog/, whose definitions GET /processes lists) joined with its implementation
// from the modules below. Every offered process has exactly one implementation and every
// implementation a catalogue entry: a start fails otherwise.
import type { ProcessDef, ProcessSpec } from '../core/process.js';
import { processCatalog, type ProcessCatalog } from '../process-catalog/catalog.js';
import { bind, type ProcessImpl } from './implement.js';
import { processes as math } from './math.js';
import { processes as logic } from './logic.js';
import { processes as arrays } from './arrays.js';
import { processes as statistics } from './statistics.js';
import { processes as texts } from './texts.js';
import { processes as load } from './cubes/load.js';
import { processes as filters } from './cubes/filters.js';
import { processes as apply } from './cubes/apply.js';
import { processes as dimensions } from './cubes/dimensions.js';
import { processes as combine } from './cubes/combine.js';
import { processes as aggregate } from './cubes/aggregate.js';
import { processes as resample } from './cubes/resample.js';
import { processes as climate } from './cubes/climate.js';
import { processes as inspect } from './cubes/inspect.js';
import { processes as polygon } from './cubes/polygon.js';
import { processes as udf } from './udf.js';
import { processes as zonal } from './cubes/zonal.js';
import { processes as vectorLoad } from './cubes/vector-load.js';
import { processes as vectorProcesses } from './cubes/vector-processes.js';
import { processes as curves } from './cubes/curves.js';
import { processes as spatialReduce } from './cubes/spatial-reduce.js';
import { processes as flatten } from './cubes/flatten.js';
import { processes as predictOnnx } from './ml/predict-onnx.js';
import { processes as forests } from './ml/random-forest.js';

export class Registry {
  private readonly byId = new Map<string, ProcessDef>();

  constructor(catalog: ProcessCatalog, impls: ProcessImpl[]) {
    for (const impl of impls) {
      const entry = catalog.get(impl.id);
      if (!entry) throw new Error(`process ${impl.id} is implemented but not in the process catalogue`);
      if (this.byId.has(impl.id)) throw new Error(`process ${impl.id} is implemented twice`);
      this.byId.set(impl.id, bind(impl, entry.spec, entry.omittable));
    }
    for (const id of catalog.ids()) if (!this.byId.has(id)) throw new Error(`process ${id} is in the process catalogue but has no implementation`);
  }

  get(id: string): ProcessDef | undefined {
    return this.byId.get(id);
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  /** Specs sorted by id. */
  specs(): ProcessSpec[] {
    return [...this.byId.values()].map((d) => d.spec).sort((a, b) => (a.id < b.id ? -1 : 1));
  }
}

/** Every implementation, by group. */
export const implementations: ProcessImpl[] = [
  ...math,
  ...logic,
  ...arrays,
  ...statistics,
  ...texts,
  ...load,
  ...filters,
  ...apply,
  ...dimensions,
  ...combine,
  ...aggregate,
  ...resample,
  ...climate,
  ...inspect,
  ...polygon,
  ...udf,
  ...zonal,
  ...vectorLoad,
  ...vectorProcesses,
  ...curves,
  ...spatialReduce,
  ...flatten,
  ...predictOnnx,
  ...forests,
];

export const predefined = new Registry(processCatalog, implementations);

// The predefined processes this back-end offers, by id. Only processes that really work here are
// registered: GET /processes lists exactly these.
import type { ProcessDef, ProcessSpec } from '../core/process.js';
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
import { processes as ml } from './ml.js';

export class Registry {
  private readonly byId = new Map<string, ProcessDef>();

  constructor(defs: ProcessDef[]) {
    for (const d of defs) {
      if (this.byId.has(d.spec.id)) throw new Error(`process ${d.spec.id} is defined twice`);
      this.byId.set(d.spec.id, d);
    }
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

export const predefined = new Registry([...math, ...logic, ...arrays, ...statistics, ...texts, ...load, ...filters, ...apply, ...dimensions, ...combine, ...aggregate, ...resample, ...climate, ...inspect, ...polygon, ...udf, ...zonal, ...vectorLoad, ...vectorProcesses, ...curves, ...spatialReduce, ...flatten, ...ml]);

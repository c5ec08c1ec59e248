// Adversarial process graphs: random graphs over the processes the server lists (with their real
// parameter names, so the process implementations themselves get odd arguments), and hand-made
// pathologies: cycles, self references, references to missing or prototype-named nodes,
// out-of-scope parameters, unknown processes and namespaces, deep child nesting, thousands of
// nodes, huge literal arrays, loads with absurd extents.
import fc from 'fast-check';
import { type J, raw, arr, obj, of, leaf, adversarialValue, giantArray } from './json.js';

export interface ProcessInfo {
  id: string;
  parameters: string[];
}

export interface GraphWorld {
  processes: ProcessInfo[];
  /** Stored processes of the sender (ids), e.g. ones that call themselves. */
  stored: string[];
  collections: string[];
}

const node = (processId: string, args: [string, J][], extra: [string, J][] = []): J => obj([['process_id', of(processId)], ['arguments', obj(args)], ...extra]);
const result: [string, J] = ['result', raw('true')];
const ref = (id: string) => obj([['from_node', of(id)]]);
const param = (name: string) => obj([['from_parameter', of(name)]]);
const child = (graph: J) => obj([['process_graph', graph]]);
const graphOf = (nodes: [string, J][]) => obj(nodes);

const NODE_IDS = ['a', 'b', 'c', 'd', 'e', 'load', 'save', '__proto__', 'constructor', 'toString', 'hasOwnProperty', '', ' ', 'é', 'x'.repeat(300), '1'];
const PARAM_NAMES = ['x', 'y', 'data', 'value', 'context', 'spatial_extent', 'tile_zoom', 'nope', '__proto__', 'constructor', 'toString', ''];
const NAMESPACES = ['null', '"backend"', '"user"', '"foo"', '"https://example.org/processes.json"', '123', '{}', '""', '"__proto__"'];

/** Pathological graphs that are fixed shapes (sizes vary). */
function pathologies(w: GraphWorld): fc.Arbitrary<J>[] {
  const coll = w.collections[0] ?? 'NOPE';
  const add = (x: J, y: J, extra: [string, J][] = []) =>
    node(
      'add',
      [
        ['x', x],
        ['y', y],
      ],
      extra,
    );
  const applyTo = (inner: J) =>
    node(
      'apply',
      [
        ['data', raw('[1,2,3]')],
        ['process', child(inner)],
      ],
      [result],
    );
  return [
    // cycles and self references
    fc.constant(
      graphOf([
        ['a', add(ref('b'), raw('1'), [result])],
        ['b', add(ref('a'), raw('1'))],
      ]),
    ),
    fc.constant(graphOf([['a', add(ref('a'), raw('1'), [result])]])),
    fc.constantFrom('zz', '', 'constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf').map((id) => graphOf([['a', add(ref(id), raw('1'), [result])]])),
    // parameters nobody declares, at the root and in child processes; a child referring to its parent's nodes
    fc.constantFrom(...PARAM_NAMES).map((p) => graphOf([['a', add(param(p), raw('1'), [result])]])),
    fc.constantFrom(...PARAM_NAMES).map((p) => graphOf([['a', applyTo(graphOf([['b', add(param('x'), param(p), [result])]]))]])),
    fc.constant(
      graphOf([
        ['a', add(raw('1'), raw('2'))],
        [
          'r',
          node(
            'apply',
            [
              ['data', raw('[1]')],
              ['process', child(graphOf([['b', add(ref('a'), param('x'), [result])]]))],
            ],
            [result],
          ),
        ],
      ]),
    ),
    // unknown processes and namespaces, stored processes that call themselves
    fc
      .tuple(fc.constantFrom('nope', 'ADD', 'add ', 'constructor', '__proto__', 'x'.repeat(2000), ...w.stored), fc.constantFrom(...NAMESPACES))
      .map(([id, ns]) => graphOf([['a', node(id, [['x', raw('1')]], [result, ['namespace', raw(ns)]])]])),
    // deep nesting of child processes
    fc.constantFrom(20, 60, 150, 1000).map((depth) => {
      let g = graphOf([['b', add(param('x'), raw('1'), [result])]]);
      for (let i = 0; i < depth; i++)
        g = graphOf([
          [
            'n',
            node(
              'apply',
              [
                ['data', param('x')],
                ['process', child(g)],
              ],
              [result],
            ),
          ],
        ]);
      return graphOf([
        [
          'a',
          node(
            'apply',
            [
              ['data', raw('[1,2]')],
              ['process', child(g)],
            ],
            [result],
          ),
        ],
      ]);
    }),
    // thousands of nodes: a long chain, a wide fan-in
    fc.constantFrom(500, 3000, 10_000).map((n) => graphOf(Array.from({ length: n }, (_, i): [string, J] => [`n${i}`, add(i ? ref(`n${i - 1}`) : raw('1'), raw('1'), i === n - 1 ? [result] : [])]))),
    fc
      .constantFrom(1000, 5000)
      .map((n) =>
        graphOf([
          ...Array.from({ length: n }, (_, i): [string, J] => [`n${i}`, add(raw(String(i)), raw('1'))]),
          ['sum', node('sum', [['data', arr(Array.from({ length: n }, (_, i) => ref(`n${i}`)))]], [result])],
        ]),
      ),
    // huge literal arrays
    fc.constantFrom(10_000, 200_000).map((n) => graphOf([['a', node('sum', [['data', giantArray(n, '1.5')]], [result])]])),
    fc.constantFrom(10_000, 100_000).map((n) =>
      graphOf([
        [
          'a',
          node(
            'array_element',
            [
              ['data', giantArray(n)],
              ['index', raw(String(n - 1))],
            ],
            [result],
          ),
        ],
      ]),
    ),
    // loads with absurd extents, resolutions and outputs
    fc
      .record({
        ext: fc.oneof(
          fc.constantFrom('null', '{}', '[]', '"x"', '{"west":1e308,"east":-1e308,"south":1e308,"north":-1e308}', '{"west":-180,"east":180,"south":-90,"north":90}'),
          fc.constantFrom('{"west":16.7,"east":16.75,"south":47.9,"north":47.95}', '{"west":16.7,"east":16.7,"south":47.9,"north":47.9}', '{"west":1e-300,"east":2e-300,"south":0,"north":1e-300,"crs":3857}'),
          fc.constantFrom(
            '{"west":16.7,"east":16.8,"south":47.9,"north":48,"crs":"EPSG:999999"}',
            '{"west":16.7,"east":16.8,"south":47.9,"north":48,"crs":"foo"}',
            '{"west":"a","east":{},"south":[],"north":null}',
          ),
        ),
        time: fc.constantFrom('null', '["2024-06-01","2024-07-01"]', '["2024-07-01","2024-06-01"]', '[null,null]', '["2024-13-45",null]', '["0000-01-01","9999-12-31T23:59:59Z"]', '"2024"', '[]'),
        bands: fc.constantFrom('null', '["B04"]', '["B04","B08"]', '[]', '["NOPE"]', '[1]', '"B04"', '["B04","B04"]'),
        id: fc.constantFrom(coll, 'NOPE', '', '../x', coll.toLowerCase()),
        then: fc.constantFrom('none', 'resample', 'save', 'reduce', 'filter'),
        resolution: fc.constantFrom('1e-9', '0', '-1', '1e308', '10', '"x"', '[0,0]'),
        format: fc.constantFrom('"GTiff"', '"PNG"', '"JPEG"', '"netCDF"', '"JSON"', '"foo"', '""', '1', 'null'),
        options: fc.constantFrom('{}', '{"colormap":"nope"}', '{"compress":1e309}', '{"__proto__":{"x":1}}', '[]', 'null', '{"datatype":"int128"}'),
      })
      .map((r) => {
        const nodes: [string, J][] = [
          [
            'load',
            node('load_collection', [
              ['id', of(r.id)],
              ['spatial_extent', raw(r.ext)],
              ['temporal_extent', raw(r.time)],
              ['bands', raw(r.bands)],
            ]),
          ],
        ];
        const last = (n: J): [string, J] => ['out', n];
        if (r.then === 'resample')
          nodes.push(
            last(
              node('resample_spatial', [
                ['data', ref('load')],
                ['resolution', raw(r.resolution)],
              ]),
            ),
          );
        else if (r.then === 'reduce')
          nodes.push(
            last(
              node('reduce_dimension', [
                ['data', ref('load')],
                ['dimension', of('t')],
                ['reducer', child(graphOf([['m', node('median', [['data', param('data')]], [result])]]))],
              ]),
            ),
          );
        else if (r.then === 'filter')
          nodes.push(
            last(
              node('filter_bbox', [
                ['data', ref('load')],
                ['extent', raw(r.ext)],
              ]),
            ),
          );
        else
          nodes.push(
            last(
              node('save_result', [
                ['data', ref('load')],
                ['format', raw(r.format)],
                ['options', raw(r.options)],
              ]),
            ),
          );
        nodes[nodes.length - 1] = [nodes[nodes.length - 1][0], obj([...(nodes[nodes.length - 1][1] as { o: [string, J][] }).o, result])];
        return graphOf(nodes);
      }),
  ];
}

/** A random graph over the listed processes, with odd values, references and child processes. */
function randomGraphs(w: GraphWorld): fc.Arbitrary<J> {
  const procs = w.processes.length ? w.processes : [{ id: 'add', parameters: ['x', 'y'] }];
  const nodeId = fc.constantFrom(...NODE_IDS);
  return fc.letrec<{ graph: J; value: J }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      { weight: 4, arbitrary: leaf },
      { weight: 2, arbitrary: nodeId.map(ref) },
      { weight: 2, arbitrary: fc.constantFrom(...PARAM_NAMES).map(param) },
      { weight: 1, arbitrary: tie('graph').map(child) },
      { weight: 1, arbitrary: fc.array(tie('value'), { maxLength: 4 }).map(arr) },
      { weight: 1, arbitrary: adversarialValue },
    ),
    graph: fc
      .array(
        fc.record({
          id: nodeId,
          proc: fc.oneof({ weight: 9, arbitrary: fc.constantFrom(...procs) }, { weight: 1, arbitrary: fc.constantFrom(...w.stored.map((id) => ({ id, parameters: ['x'] }))) }),
          args: fc.array(fc.tuple(fc.nat(), tie('value')), { maxLength: 4 }),
          junkArg: fc.option(fc.tuple(fc.constantFrom('nope', '__proto__', 'constructor', ''), tie('value')), { freq: 8 }),
          result: fc.constantFrom<'true' | 'false' | 'none' | 'odd'>('true', 'true', 'false', 'none', 'none', 'odd'),
          ns: fc.option(fc.constantFrom(...NAMESPACES), { freq: 6 }),
        }),
        { minLength: 1, maxLength: 6 },
      )
      .map((nodes) =>
        graphOf(
          nodes.map((n): [string, J] => {
            const args: [string, J][] = n.args.map(([i, v]) => [n.proc.parameters.length ? n.proc.parameters[i % n.proc.parameters.length] : `p${i}`, v]);
            if (n.junkArg) args.push(n.junkArg);
            const extra: [string, J][] = [];
            if (n.result !== 'none') extra.push(['result', raw(n.result === 'odd' ? '"yes"' : n.result)]);
            if (n.ns) extra.push(['namespace', raw(n.ns)]);
            return [n.id, node(n.proc.id, args, extra)];
          }),
        ),
      ),
  })).graph;
}

export function graphArbitrary(w: GraphWorld): fc.Arbitrary<J> {
  return fc.oneof({ weight: 3, arbitrary: randomGraphs(w) }, { weight: 2, arbitrary: fc.oneof(...pathologies(w)) });
}

/** The bodies a graph travels in: the 1.x `process` member, the interface spec's top level, with parameters declared or not. */
export function graphBody(graph: J, form: number, extra: [string, J][]): J {
  switch (form % 4) {
    case 0:
      return obj([['process', obj([['process_graph', graph]])], ...extra]);
    case 1:
      return obj([['process_graph', graph], ...extra]);
    case 2:
      return obj([
        [
          'process',
          obj([
            ['process_graph', graph],
            ['parameters', of([{ name: 'x', schema: {} }])],
          ]),
        ],
        ...extra,
      ]);
    default:
      return obj([['process_graph', graph], ['parameters', of([{ name: 'x', schema: {}, default: 1 }])], ['type', of('XYZ')], ...extra]);
  }
}

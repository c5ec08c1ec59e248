// JSON for the fuzz suite, built as a small syntax tree rather than as JavaScript values, so that
// what no JSON.stringify can produce is sendable too: number texts beyond double range (1e309),
// duplicate keys, `__proto__` as a member name, lone surrogates. Plus the adversarial leaves and
// the body encodings (broken, invalid UTF-8, deep, giant) every request family draws from.
import fc from 'fast-check';

/** An object (entries in order, duplicates allowed), an array, or a literal JSON text. */
export type J = { o: [string, J][] } | { a: J[] } | { r: string };

export const raw = (text: string): J => ({ r: text });
export const arr = (items: J[]): J => ({ a: items });
export const obj = (entries: [string, J][]): J => ({ o: entries });
/** A plain JavaScript value as a tree (for the well-formed parts of a body). */
export function of(v: unknown): J {
  if (Array.isArray(v)) return arr(v.map(of));
  if (v !== null && typeof v === 'object') return obj(Object.entries(v).map(([k, x]) => [k, of(x)]));
  return raw(JSON.stringify(v) ?? 'null');
}

export function text(j: J): string {
  // Iterative: the trees may be 10,000 levels deep on purpose.
  const out: string[] = [];
  const stack: (J | string)[] = [j];
  while (stack.length) {
    const top = stack.pop()!;
    if (typeof top === 'string') out.push(top);
    else if ('r' in top) out.push(top.r);
    else if ('a' in top) {
      const parts: (J | string)[] = ['['];
      top.a.forEach((x, i) => parts.push(...(i ? [',', x] : [x])));
      parts.push(']');
      for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]);
    } else {
      const parts: (J | string)[] = ['{'];
      top.o.forEach(([k, x], i) => parts.push(`${i ? ',' : ''}${JSON.stringify(k)}:`, x));
      parts.push('}');
      for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]);
    }
  }
  return out.join('');
}

/** Every position in a tree, as a list of steps (index into entries or items). */
export function positions(j: J, max = 200): number[][] {
  const out: number[][] = [[]];
  const walk = (x: J, path: number[]) => {
    if (out.length >= max) return;
    const kids = 'o' in x ? x.o.map((e) => e[1]) : 'a' in x ? x.a : [];
    kids.forEach((k, i) => {
      out.push([...path, i]);
      walk(k, [...path, i]);
    });
  };
  walk(j, []);
  return out;
}

/** A copy of `j` with the subtree at `path` replaced (or removed, with `undefined`). */
export function replaceAt(j: J, path: number[], by: J | undefined): J {
  if (!path.length) return by ?? raw('null');
  const [i, ...rest] = path;
  if ('o' in j) {
    const entries = j.o.slice();
    if (rest.length || by) entries[i] = [entries[i][0], replaceAt(entries[i][1], rest, by)];
    else entries.splice(i, 1);
    return obj(entries);
  }
  if ('a' in j) {
    const items = j.a.slice();
    if (rest.length || by) items[i] = replaceAt(items[i], rest, by);
    else items.splice(i, 1);
    return arr(items);
  }
  return j;
}

// --- adversarial leaves ------------------------------------------------------------------------

const NUMBER_TEXTS = [
  '0',
  '-0',
  '1',
  '-1',
  '1.5',
  '1e309',
  '-1e309',
  '1e-400',
  '4.9e-324',
  '1.7976931348623157e308',
  '-1.7976931348623157e308',
  '9007199254740993',
  '123456789012345678901234567890',
  '0.1',
  '2147483648',
  '-2147483649',
  '4294967296',
  '1E2',
  '256',
  '512',
  '22',
  '31',
];
const STRING_VALUES = [
  '',
  ' ',
  'NaN',
  'Infinity',
  '-Infinity',
  'null',
  'true',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'XYZ',
  'xyz',
  'WMTS',
  'GTiff',
  'PNG',
  'JSON',
  'netCDF',
  'free',
  'debug',
  'error',
  'EPSG:4326',
  'EPSG:999999',
  '../../etc/passwd',
  '2024-06-01',
  '2024-13-45T99:99:99Z',
  '0000-01-01',
  'P1D',
  'DEMO_S2_L2A',
  'B04',
  't',
  'x',
  'y',
  'bands',
  '${x}',
  '{x}',
  '%s%n',
  'é',
  '日本語',
  '\u202e',
  '\u0000',
  '\ufeff',
  '\ud83d\ude00',
];
/** JSON texts JSON.stringify would never write: lone surrogates, escaped NUL. */
const STRING_TEXTS = ['"\\ud800"', '"\\udfff\\ud800"', '"\\u0000"', '"a\\u0000b"'];

export const numberText = fc.oneof(
  fc.constantFrom(...NUMBER_TEXTS),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
);

export const stringText = fc.oneof(
  fc.constantFrom(...STRING_VALUES).map((s) => JSON.stringify(s)),
  fc.constantFrom(...STRING_TEXTS),
  fc.string({ maxLength: 30 }).map((s) => JSON.stringify(s)),
  fc.string({ unit: 'binary', maxLength: 20 }).map((s) => JSON.stringify(s)),
  fc.integer({ min: 1000, max: 200_000 }).map((n) => JSON.stringify('a'.repeat(n))),
);

export const leaf: fc.Arbitrary<J> = fc.oneof(
  { weight: 3, arbitrary: numberText.map(raw) },
  { weight: 3, arbitrary: stringText.map(raw) },
  { weight: 1, arbitrary: fc.constantFrom('true', 'false', 'null').map(raw) },
);

/** Object keys worth trying: members of our bodies, reserved graph keys, prototype names. */
export const KEYS = [
  'process',
  'process_graph',
  'process_id',
  'arguments',
  'result',
  'namespace',
  'from_node',
  'from_parameter',
  'parameters',
  'title',
  'description',
  'summary',
  'type',
  'configuration',
  'enabled',
  'plan',
  'budget',
  'log_level',
  'id',
  'returns',
  'categories',
  'examples',
  'links',
  'exceptions',
  'deprecated',
  'experimental',
  'data',
  'x',
  'y',
  'format',
  'options',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  '',
  ' ',
  'é',
  'a.b',
  'a/b',
];
export const key = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...KEYS) }, { weight: 1, arbitrary: fc.string({ maxLength: 12 }) });

/** Random JSON of modest size, any shape. */
export const anyJson: fc.Arbitrary<J> = fc.letrec<{ j: J }>((tie) => ({
  j: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, fc.array(tie('j'), { maxLength: 5 }).map(arr), fc.array(fc.tuple(key, tie('j')), { maxLength: 5 }).map(obj)),
})).j;

/** Big structures, built on demand (kept out of the shrinker: they are values, not generated trees). */
export const deepArray = (n: number) => raw('['.repeat(n) + ']'.repeat(n));
export const deepObject = (n: number) => raw('{"a":'.repeat(n) + '1' + '}'.repeat(n));
export const giantArray = (n: number, item = '0') => raw(`[${new Array(n).fill(item).join(',')}]`);

export const bigValue: fc.Arbitrary<J> = fc.oneof(
  fc.constantFrom(100, 1000, 10_000, 100_000).map(deepArray),
  fc.constantFrom(100, 1000, 10_000).map(deepObject),
  fc.constantFrom(10_000, 100_000, 250_000).map((n) => giantArray(n)),
  fc.constantFrom(10_000, 50_000).map((n) => giantArray(n, '{"from_node":"a"}')),
  fc.constantFrom(1000, 20_000).map((n) => obj(Array.from({ length: n }, (_, i) => [`k${i}`, raw(String(i))]))),
);

/** A value that replaces a member of a well-formed body: a wrong type, an edge value, a reference, something big. */
export const adversarialValue: fc.Arbitrary<J> = fc.oneof(
  { weight: 6, arbitrary: leaf },
  { weight: 3, arbitrary: anyJson },
  { weight: 1, arbitrary: bigValue },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom(
        '{}',
        '[]',
        '{"from_node":"a"}',
        '{"from_node":"constructor"}',
        '{"from_parameter":"x"}',
        '{"from_parameter":"__proto__"}',
        '{"process_graph":{}}',
        '{"process_graph":null}',
        '{"__proto__":{"polluted":1}}',
        '{"a":1,"a":2}',
        '[null]',
        '[[]]',
      )
      .map(raw),
  },
);

/** A mutation of a well-formed body: replace, delete or add members at random positions. */
export type Mutation = { at: number; op: 'replace' | 'delete' | 'add'; key: string; value: J };
export const mutation: fc.Arbitrary<Mutation> = fc.record({
  at: fc.nat(),
  op: fc.constantFrom('replace', 'replace', 'delete', 'add'),
  key,
  value: adversarialValue,
});

export function mutate(base: J, muts: Mutation[]): J {
  let j = base;
  for (const m of muts) {
    const all = positions(j);
    const path = all[m.at % all.length];
    if (m.op === 'replace') j = replaceAt(j, path, m.value);
    else if (m.op === 'delete') j = path.length ? replaceAt(j, path, undefined) : j;
    else {
      let target = j;
      for (const i of path) target = 'o' in target ? target.o[i][1] : 'a' in target ? target.a[i] : target;
      if ('o' in target) j = replaceAt(j, path, obj([...target.o, [m.key, m.value]]));
      else if ('a' in target) j = replaceAt(j, path, arr([...target.a, m.value]));
    }
  }
  return j;
}

// --- body encodings ----------------------------------------------------------------------------

/** How a JSON text goes on the wire: as is, broken, with invalid UTF-8, or framed in odd ways. */
export type Encoding =
  { kind: 'plain' } | { kind: 'truncate'; at: number } | { kind: 'garbage'; bytes: number[] } | { kind: 'badUtf8'; at: number; seq: number[] } | { kind: 'wrap'; before: string; after: string };

const BAD_UTF8 = [[0xff], [0xfe, 0xff], [0xc3, 0x28], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x80], [0xe2, 0x82]];

export const encoding: fc.Arbitrary<Encoding> = fc.oneof(
  { weight: 10, arbitrary: fc.constant({ kind: 'plain' as const }) },
  { weight: 2, arbitrary: fc.nat().map((at) => ({ kind: 'truncate' as const, at })) },
  { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 64 }).map((bytes) => ({ kind: 'garbage' as const, bytes })) },
  { weight: 2, arbitrary: fc.tuple(fc.nat(), fc.constantFrom(...BAD_UTF8)).map(([at, seq]) => ({ kind: 'badUtf8' as const, at, seq })) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('', '\ufeff', ' \n\t', '//c\n', '[', ")]}'\n"), fc.constantFrom('', ',', ' ', '}', '\u0000', 'garbage', ',{}'))
      .map(([before, after]) => ({ kind: 'wrap' as const, before, after })),
  },
);

export function encode(jsonText: string, e: Encoding): Buffer {
  const buf = Buffer.from(jsonText, 'utf8');
  switch (e.kind) {
    case 'plain':
      return buf;
    case 'truncate':
      return buf.subarray(0, e.at % Math.max(1, buf.length));
    case 'garbage':
      return Buffer.from(e.bytes);
    case 'badUtf8': {
      const at = e.at % (buf.length + 1);
      return Buffer.concat([buf.subarray(0, at), Buffer.from(e.seq), buf.subarray(at)]);
    }
    case 'wrap':
      return Buffer.concat([Buffer.from(e.before, 'utf8'), buf, Buffer.from(e.after, 'utf8')]);
  }
}

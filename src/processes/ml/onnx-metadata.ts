// What an ONNX file says about itself beyond its inputs and outputs: the key-value pairs of the
// model (ModelProto.metadata_props, field 14, each a StringStringEntryProto of key 1 and value 2).
// onnxruntime-node does not hand them out, so the top level of the protocol buffer is walked here:
// only tags and lengths are read, every other field is stepped over. Output labels of a model are
// read from these pairs (`output_labels`, `class_labels`, `labels` or `classes`: a JSON array or
// comma-separated names).

const METADATA_PROPS = 14;
const LABEL_KEYS = ['output_labels', 'class_labels', 'labels', 'classes'];

/** A cursor over protocol buffer bytes; null from a read means the bytes end too early. */
class Wire {
  pos = 0;
  constructor(
    readonly b: Uint8Array,
    readonly end = b.length,
  ) {}

  varint(): number | null {
    let v = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) return null;
      const byte = this.b[this.pos++];
      v += (byte & 0x7f) * scale;
      if (!(byte & 0x80)) return v;
      scale *= 128;
    }
    return null;
  }

  /** Steps over a field of this wire type; false when it cannot. */
  skip(type: number): boolean {
    if (type === 0) return this.varint() !== null;
    if (type === 1) return (this.pos += 8) <= this.end;
    if (type === 5) return (this.pos += 4) <= this.end;
    if (type === 2) {
      const n = this.varint();
      return n !== null && (this.pos += n) <= this.end;
    }
    return false;
  }
}

const text = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');

/** The metadata pairs of an ONNX model (empty when it has none or its bytes do not parse). */
export function onnxMetadata(bytes: Uint8Array): Map<string, string> {
  const out = new Map<string, string>();
  const w = new Wire(bytes);
  while (w.pos < w.end) {
    const tag = w.varint();
    if (tag === null) break;
    const field = Math.floor(tag / 8);
    const type = tag & 7;
    if (field === METADATA_PROPS && type === 2) {
      const n = w.varint();
      if (n === null || w.pos + n > w.end) break;
      const entry = new Wire(bytes, w.pos + n);
      entry.pos = w.pos;
      let key = '';
      let value = '';
      while (entry.pos < entry.end) {
        const t = entry.varint();
        if (t === null) break;
        if ((t & 7) === 2 && (t >> 3 === 1 || t >> 3 === 2)) {
          const len = entry.varint();
          if (len === null || entry.pos + len > entry.end) break;
          const s = text(bytes.subarray(entry.pos, entry.pos + len));
          if (t >> 3 === 1) key = s;
          else value = s;
          entry.pos += len;
        } else if (!entry.skip(t & 7)) break;
      }
      if (key) out.set(key, value);
      w.pos += n;
    } else if (!w.skip(type)) break;
  }
  return out;
}

/** Output labels a model's metadata names, or null. */
export function labelsOfMetadata(meta: Map<string, string>): string[] | null {
  for (const k of LABEL_KEYS) {
    const v = meta.get(k)?.trim();
    if (!v) continue;
    if (v.startsWith('[')) {
      try {
        const list = JSON.parse(v);
        if (Array.isArray(list) && list.length) return list.map(String);
      } catch {
        // not JSON after all: read as names separated by commas
      }
    }
    const names = v.split(',').map((s) => s.trim());
    if (names.length && names.every(Boolean)) return names;
  }
  return null;
}

/**
 * Output labels from a STAC Item describing the model: the classes of its first MLM output
 * (`mlm:output[0]['classification:classes']`, by `value` when given), or null.
 */
export function labelsOfItem(properties: Record<string, unknown> | undefined): string[] | null {
  const outputs = properties?.['mlm:output'];
  const first = Array.isArray(outputs) ? (outputs[0] as Record<string, unknown> | undefined) : undefined;
  const classes = first?.['classification:classes'];
  if (!Array.isArray(classes) || !classes.length) return null;
  const named = classes.filter((c): c is { name: unknown; value?: unknown } => !!c && typeof c === 'object' && 'name' in c);
  if (named.length !== classes.length) return null;
  const byValue = named.every((c) => typeof c.value === 'number') ? [...named].sort((p, q) => (p.value as number) - (q.value as number)) : named;
  return byValue.map((c) => String(c.name));
}

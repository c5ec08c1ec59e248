// Header lists that many answers share (a version's CORS headers, the browser headers), kept with
// their bytes made once: uWS converts a string to UTF-8 on every call, bytes it takes as they are.
export type HeaderList = [string, string][];

type EncodedList = readonly (readonly [Buffer, Buffer])[];
const encodedLists = new WeakMap<HeaderList, EncodedList>();
/**
 * Marks a header list that is used for many answers as it is (the CORS headers of a version): it is
 * written from bytes made once.
 */
export function fixedHeaders(list: HeaderList): HeaderList {
  encodedLists.set(
    list,
    list.map(([k, v]) => [Buffer.from(k, 'latin1'), Buffer.from(v, 'utf8')] as const),
  );
  return list;
}
/** Whether a list was marked with fixedHeaders. */
export const isFixedHeaders = (list: HeaderList): boolean => encodedLists.has(list);
/** The bytes of a list marked with fixedHeaders, or undefined. */
export const encodedList = (list: HeaderList): EncodedList | undefined => encodedLists.get(list);

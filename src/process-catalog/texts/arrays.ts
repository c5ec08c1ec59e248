// Our words for the processes implemented in src/processes/arrays.ts.
import type { ProcessTexts } from '../spec.js';

const ARRAY_LABEL_CONFLICT = 'A label occurs in both arrays; rename or remove it first.';

export const texts: Record<string, ProcessTexts> = {
  array_append: {
    summary: 'Add a value at the end of an array',
    description:
      'Returns a new array with `value` after the last element. For a labeled array the new element gets `label`, or the next index as a number when `label` is null; a label already in use raises LabelExists. A label for an unlabeled array raises ArrayNotLabeled.',
    parameters: {
      data: 'The array to extend.',
      value: 'The value to add at the end.',
      label: 'Label of the new element (labeled arrays only); null uses the next index.',
    },
    returns: 'A new array one element longer, labeled if the input is labeled.',
    exceptions: {
      LabelExists: 'The array already has an element with this label.',
      ArrayNotLabeled: 'A label was given but the array has no labels.',
    },
  },
  array_apply: {
    summary: 'Map a child process over an array',
    description:
      'Runs the child process once per element, with the element, its index, its label (null for unlabeled arrays) and the context, and collects the answers in order. The result has as many elements as the input and keeps its labels.',
    parameters: {
      data: 'The array whose elements are processed.',
      process: 'Child process that turns one element into the new value.',
      context: 'Any value handed to the child process unchanged.',
    },
    returns: 'An array of the child process answers, labeled like the input.',
  },
  array_concat: {
    summary: 'Join two arrays',
    description:
      'Returns the elements of the first array followed by those of the second. Labels are kept only when both arrays are labeled, and then a label found in both raises ArrayLabelConflict; otherwise the result is unlabeled. A single value (a number, a string, a boolean or null) in place of an array counts as an array of that one value, as the clients write `array_concat(data, ndvi)` in a child process.',
    parameters: {
      array1: 'The array that comes first.',
      array2: 'The array appended after it.',
    },
    returns: 'The joined array.',
    exceptions: {
      ArrayLabelConflict: ARRAY_LABEL_CONFLICT,
    },
  },
  array_contains: {
    summary: 'Test whether an array holds a value',
    description:
      'True if an element equals `value` with the strict typing of eq (no type conversion, case-sensitive strings, dates compared as plain text, NaN equal to nothing), false otherwise. A null value, or an array or object, is never found, and nested arrays are not searched.',
    parameters: {
      data: 'The array to search.',
      value: 'The value to look for; null always gives false.',
    },
    returns: 'Whether the value occurs in the array.',
  },
  array_create: {
    summary: 'Build a new array',
    description: 'Returns a new unlabeled array holding the elements of `data`, repeated `repeat` times one after the other. Without arguments the array is empty.',
    parameters: {
      data: 'The elements of the new array (default: none).',
      repeat: 'How many times the elements are written in a row, at least 1.',
    },
    returns: 'The new array.',
  },
  array_element: {
    summary: 'Pick one element of an array',
    description:
      'Returns the element at the zero-based `index`, or the element with the given `label` of a labeled array; exactly one of the two must be given. A missing element raises ArrayElementNotAvailable, or gives null when `return_nodata` is true.',
    parameters: {
      data: 'The array to read from.',
      index: 'Zero-based position of the element.',
      label: 'Label of the element (labeled arrays only).',
      return_nodata: 'Give null instead of an error when there is no such element.',
    },
    returns: 'The selected element.',
    exceptions: {
      ArrayElementNotAvailable: 'The array has no element at this index or with this label.',
      ArrayElementParameterMissing: 'Give either `index` or `label` to select an element.',
      ArrayElementParameterConflict: 'Give only one of `index` and `label`, not both.',
      ArrayNotLabeled: 'The array has no labels, so `label` cannot be used; select by `index`.',
    },
  },
  array_filter: {
    summary: 'Keep the elements passing a condition',
    description:
      'Runs the condition child process per element (with value, index, label and context) and keeps, in order, the elements for which it answers true; false or null drops them. Labels of the kept elements are kept.',
    parameters: {
      data: 'The array to filter.',
      condition: 'Child process answering true for elements to keep.',
      context: 'Any value handed to the condition unchanged.',
    },
    returns: 'The kept elements, labeled if the input is labeled.',
  },
  array_find: {
    summary: 'Index of a value in an array',
    description:
      'Returns the zero-based index of the first element equal to `value` (the last one with `reverse`), or null if there is none. Equality is strict as in eq (no type conversion, case-sensitive, NaN matches nothing); a null, array or object value always gives null.',
    parameters: {
      data: 'The array to search.',
      value: 'The value to look for.',
      reverse: 'Search from the end and give the index of the last match.',
    },
    returns: 'The index of the match, or null.',
  },
  array_interpolate_linear: {
    summary: 'Fill inner gaps by linear interpolation',
    description:
      'Replaces every null or NaN that lies between two numbers with the value on the straight line through its nearest numerical neighbours; leading and trailing gaps stay as they are. The x positions are the labels when they are all numbers or all dates/date-times (assumed sorted), otherwise the indices. Labels are kept.',
    parameters: {
      data: 'Numbers with gaps (null or NaN) to fill; labels, if numeric or temporal, give the positions.',
    },
    returns: 'The array with its inner gaps filled, labeled like the input.',
  },
  array_labels: {
    summary: 'Labels of an array',
    description: 'Returns the labels of a labeled array in element order, or the zero-based indices 0..n-1 for an unlabeled array.',
    parameters: {
      data: 'The array whose labels are wanted.',
    },
    returns: 'The labels, or the indices.',
  },
  count: {
    summary: 'Count array elements',
    description:
      'Counts the valid elements by default (condition null): all but null, NaN and ±infinity, so strings, booleans, arrays and objects count. With condition `true` every element counts; with a child process only the elements for which it answers true count.',
    parameters: {
      data: 'The array whose elements are counted.',
      condition: 'null to count valid elements, true to count all, or a child process selecting elements.',
      context: 'Any value handed to the condition unchanged.',
    },
    returns: 'The number of counted elements.',
  },
  first: {
    summary: 'First element of an array',
    description: 'Returns the first element that is not null, or null if there is none (including for an empty array). With `ignore_nodata` false it returns the first element whatever it is.',
    parameters: {
      data: 'The array to read.',
      ignore_nodata: 'Skip null elements (default); false takes the first element as it is.',
    },
    returns: 'The first (non-null) element, or null.',
  },
  last: {
    summary: 'Last element of an array',
    description: 'Returns the last element that is not null, or null if there is none (including for an empty array). With `ignore_nodata` false it returns the last element whatever it is.',
    parameters: {
      data: 'The array to read.',
      ignore_nodata: 'Skip null elements (default); false takes the last element as it is.',
    },
    returns: 'The last (non-null) element, or null.',
  },
  order: {
    summary: 'Sorting permutation of an array',
    description:
      'Returns the zero-based indices of the elements in sorted order (ascending, or descending with `asc` false); equal values keep their original order. Dates and date-times are compared as points in time. null and NaN count as no-data: dropped by default, put last with `nodata` true or first with false, in their original order.',
    parameters: {
      data: 'Numbers, dates or date-times (and no-data) to rank.',
      asc: 'Ascending order (default); false for descending.',
      nodata: 'Where no-data goes: null drops it, true puts it last, false first.',
    },
    returns: 'The permutation, as zero-based indices into the input.',
  },
  rearrange: {
    summary: 'Reorder an array by a permutation',
    description:
      'Returns the elements of `data` at the zero-based positions listed in `order`, in that order; positions may be left out or repeated. The result is unlabeled; a position outside the array is an invalid argument.',
    parameters: {
      data: 'The array to reorder.',
      order: 'Zero-based positions into `data`, e.g. from order().',
    },
    returns: 'The reordered array.',
  },
  sort: {
    summary: 'Sort an array',
    description:
      'Returns the elements in ascending order (descending with `asc` false); equal values keep their original order. Dates and date-times are compared as points in time. null and NaN count as no-data: dropped by default, put last with `nodata` true or first with false. The result is unlabeled.',
    parameters: {
      data: 'Numbers, dates or date-times (and no-data) to sort.',
      asc: 'Ascending order (default); false for descending.',
      nodata: 'Where no-data goes: null drops it, true puts it last, false first.',
    },
    returns: 'The sorted array.',
  },
  all: {
    summary: 'Whether every value is true',
    description:
      'False if any value is false, otherwise true; an empty array gives true. null values are skipped by default; with `ignore_nodata` false a null makes the answer null unless a false is present. Numbers count as booleans (0 false, others true), as in data cubes.',
    parameters: {
      data: 'Booleans (or null) to combine.',
      ignore_nodata: 'Skip null values (default); false lets them make the answer null.',
    },
    returns: 'true, false, or null.',
  },
  any: {
    summary: 'Whether at least one value is true',
    description:
      'True if any value is true, otherwise false; an empty array gives false. null values are skipped by default; with `ignore_nodata` false a null makes the answer null unless a true is present. Numbers count as booleans (0 false, others true), as in data cubes.',
    parameters: {
      data: 'Booleans (or null) to combine.',
      ignore_nodata: 'Skip null values (default); false lets them make the answer null.',
    },
    returns: 'true, false, or null.',
  },
  array_create_labeled: {
    summary: 'Build a labeled array',
    description: 'Pairs the values of `data` with the labels of `labels`, position by position, into a labeled array. Both must have the same length (else ArrayLengthMismatch), and labels must be unique.',
    parameters: {
      data: 'The values of the new array.',
      labels: 'One unique label (number or string) per value.',
    },
    returns: 'The labeled array.',
    exceptions: {
      ArrayLengthMismatch: '`data` and `labels` have different numbers of elements.',
    },
  },
  array_find_label: {
    summary: 'Index of a label in a labeled array',
    description: 'Returns the zero-based index of the element carrying `label` (strict comparison, so 1 and "1" differ), or null if no element has it or the array is not labeled.',
    parameters: {
      data: 'The labeled array to search.',
      label: 'The label to look for.',
    },
    returns: 'The index of the label, or null.',
  },
  array_modify: {
    summary: 'Insert, replace or remove array elements',
    description:
      'Removes `length` elements (fewer at the end of the array) starting at `index` and inserts `values` there; an index beyond the array end raises ArrayElementNotAvailable. Labels are kept when both arrays are labeled or one of them is empty; a label of `values` already carried by a kept element raises ArrayLabelConflict. Otherwise the result is unlabeled.',
    parameters: {
      data: 'The array to change.',
      values: 'The elements to insert at `index` (may be empty).',
      index: 'Zero-based position where elements are removed and inserted; the array length appends.',
      length: 'How many elements to remove from `index` on (default 0).',
    },
    returns: 'The changed array.',
    exceptions: {
      ArrayElementNotAvailable: 'The index lies beyond the end of the array.',
      ArrayLabelConflict: ARRAY_LABEL_CONFLICT,
    },
  },
};

// Our words for the processes implemented in src/processes/cubes/inspect.ts.
import type { ProcessTexts } from '../../spec.js';

export const texts: Record<string, ProcessTexts> = {
  inspect: {
    summary: 'Write a value to the log',
    description:
      'Adds an entry with the message, the code and a description of `data` to the log of the run, then answers `data` unchanged. Data cubes are described by their dimensions (type, extent or labels, step, reference system), shape and simple statistics (value and no-data counts, min, max, mean); a cube not loaded yet is described by the request it will make and is not read. Long arrays and objects are shortened. Inside a child process that runs on every pixel, one entry is written, not one per pixel.',
    parameters: {
      data: 'The value to describe and pass on; of any type.',
      message: 'A text for the log entry (empty by default).',
      code: 'A tag for finding or grouping the entries of this process in the log; `User` by default.',
      level: 'The severity of the entry: error, warning, info (the default) or debug.',
    },
    returns: 'The value of `data`, unchanged.',
  },
};

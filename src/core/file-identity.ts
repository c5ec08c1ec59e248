// What tells a local file from another put at its path since it was opened: its device, inode,
// size and modification time. A reader that opens a file again by path (a job's deflate threads,
// reading blocks of a file the job thread opened) compares them.

/** The identity of a file from its stat (fs.stat, fs.fstat). */
export const fileIdentity = (st: { dev: number; ino: number; size: number; mtimeMs: number }): string => `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;

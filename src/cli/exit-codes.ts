/** 0 ok, 1 some documents failed (or verify found differences), 2 usage or configuration error. */
export const EXIT_OK = 0;
export const EXIT_FAILURES = 1;
export const EXIT_USAGE = 2;

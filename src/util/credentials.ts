/**
 * Passwords in URLs (`mysql://cpe:secret@db`, `http://user:pass@gpu1:11434`) are secrets: shown and stored as `***`.
 */

/** The URL with its password masked ('mysql://cpe:***@db:3306/ki_content'); other text is left as it is. */
export function maskUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.password) return url;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    return redactCredentials(url);
  }
}

/** `//user:password@`; the password up to the `@`, a `/` in it included (a URL with one does not parse) */
const USERINFO = /\/\/([^\s:/@]+):[^\s@]*@/g;

/**
 * Any text with the passwords of the URLs in it masked: an error message or log line that quotes a configured URL
 * (an Ollama host, a Qdrant URL, a database URL) keeps the user name, never the password.
 */
export function redactCredentials(text: string): string {
  return text.includes('@') ? text.replace(USERINFO, '//$1:***@') : text;
}

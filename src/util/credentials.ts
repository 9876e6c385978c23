/**
 * Passwords in URLs (`mysql://cpe:secret@db`, `http://user:pass@gpu1:11434`) and the values of secret environment
 * variables (ANTHROPIC_API_KEY, QDRANT_API_KEY, ...) are secrets: shown and stored as `***`.
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
  let out = text.includes('@') ? text.replace(USERINFO, '//$1:***@') : text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join('***');
  return out;
}

/** Secret values registered by the configuration (longest first, so that one inside another is masked whole). */
let secrets: string[] = [];

/** Shorter values are not masked: one of 1-3 characters would mask pieces of ordinary words everywhere. */
const MIN_SECRET_LENGTH = 4;

/**
 * Registers the values of secrets the configuration read (ANTHROPIC_API_KEY, QDRANT_API_KEY, URL passwords): a
 * provider's or a proxy's error that quotes one (an echoed Authorization header) must not carry it into a log,
 * ki_dev or the terminal, so redactCredentials masks them wherever they appear, short ones too (a 7-character
 * Qdrant key was shown), down to MIN_SECRET_LENGTH.
 */
export function registerSecrets(values: ReadonlyArray<string | undefined>): void {
  // as given and as sent (HTTP trims a header's value: a quoted key has lost its surrounding white space)
  const more = values
    .flatMap((v) => (typeof v === 'string' ? [v, v.trim()] : []))
    .filter((v) => v.length >= MIN_SECRET_LENGTH);
  secrets = [...new Set([...secrets, ...more])].sort((a, b) => b.length - a.length);
}

/**
 * A fetch for a base URL that may carry user and password (`http://user:pass@proxy:11434`): fetch refuses such a
 * URL ("Request cannot be constructed from a URL that includes credentials"), so they go into an Authorization
 * header (Basic), as a browser or curl sends them, and out of the URL.
 */
export const fetchWithUrlCredentials =
  (base: typeof fetch = fetch) =>
  (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const href = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const { url, authorization } = splitUrlCredentials(href);
    if (!authorization) return base(input, init);
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    // a client that authorizes itself (the Anthropic SDK's key) keeps its header; the proxy's go beside it
    headers.set(headers.has('authorization') ? 'proxy-authorization' : 'authorization', authorization);
    return base(url, { ...init, headers });
  };

/**
 * A base URL's user and password taken out of it (`http://user:pass@proxy:6333`): the URL without them, and the Basic
 * authorization they are sent as (fetchWithUrlCredentials; and for a client that takes a URL and headers but ignores
 * user info in the URL: @qdrant/js-client-rest). A URL without them, or text that is no URL, is returned as it is, with no authorization.
 */
export function splitUrlCredentials(url: string): { url: string; authorization?: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { url };
  }
  if (!parsed.username && !parsed.password) return { url };
  const authorization = `Basic ${basicCredentials(parsed).token}`;
  parsed.username = '';
  parsed.password = '';
  return { url: parsed.toString(), authorization };
}

/**
 * The secrets a URL carries: its password, and the Basic authorization made of its user and password (a proxy
 * may echo the header it got). None for a URL without a password, or text that is no URL.
 */
export function urlSecrets(url: string | undefined): string[] {
  if (!url) return [];
  try {
    const parsed = new URL(url);
    if (!parsed.password) return [];
    const { password, token } = basicCredentials(parsed);
    return [password, token];
  } catch {
    return [];
  }
}

/** A URL's user and password, decoded, and the Basic authorization token made of them (base64 of user:password). */
function basicCredentials(url: URL): { password: string; token: string } {
  const user = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  return { password, token: Buffer.from(`${user}:${password}`).toString('base64') };
}

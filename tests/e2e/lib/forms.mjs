// Server-rendered pages without a browser: a cookie jar fed by Set-Cookie, and the first form of
// a page (its action and hidden inputs).

export class CookieJar {
  constructor() { this.jar = new Map(); }
  has(name) { return this.jar.has(name); }
  get(name) { return this.jar.get(name); }
  header() { return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; '); }
  // Keeps the cookies a response sets (a Max-Age=0 or an empty value removes one).
  keep(res) {
    for (const line of res.headers.getSetCookie?.() ?? []) {
      const nv = line.split(';')[0];
      const i = nv.indexOf('=');
      const name = nv.slice(0, i).trim();
      const value = nv.slice(i + 1).trim();
      if (/max-age=0/i.test(line) || value === '') this.jar.delete(name); else this.jar.set(name, value);
    }
    return res;
  }
}

export function decodeEntities(s) {
  return s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

// The first <form method="post"> of a page: its action and its hidden inputs; null without one.
export function parseForm(html) {
  const form = html.match(/<form method="post" action="([^"]+)">/);
  if (!form) return null;
  const fields = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[decodeEntities(m[1])] = decodeEntities(m[2]);
  return { action: decodeEntities(form[1]), fields };
}

/** The value of one sample of a Prometheus exposition, labels compared as a set; undefined when absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(',');
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const got = (match[2] ?? '').match(/[a-zA-Z_]+="(?:[^"\\]|\\.)*"/g) ?? [];
    if ([...got].sort().join(',') === wanted) return Number(match[3]);
  }
  return undefined;
}

/**
 * A Set of strings that forgets its oldest entries past `limit`, for caches fed by outside input (e.g.
 * block hashes whose signatures verified): memory stays bounded however many distinct keys arrive.
 */
export class BoundedSet extends Set<string> {
  constructor(readonly limit: number) {
    super();
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
  }

  override add(value: string): this {
    if (!this.has(value) && this.size >= this.limit) {
      const oldest = this.values().next();
      if (!oldest.done) this.delete(oldest.value);
    }
    return super.add(value);
  }
}

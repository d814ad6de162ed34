/**
 * The last `capacity` keys added, oldest forgotten first: a bounded memory of what this
 * process has done lately (an agent removed, a task's output stored), so a repeat can be
 * skipped without asking the database or the runtime. Forgetting only costs the repeat.
 */
export class RecentKeys {
  private readonly keys = new Set<string>();

  constructor(private readonly capacity: number) {}

  add(key: string): void {
    this.keys.delete(key);
    this.keys.add(key);
    if (this.keys.size > this.capacity) this.keys.delete(this.keys.values().next().value!);
  }

  has(key: string): boolean {
    return this.keys.has(key);
  }
}

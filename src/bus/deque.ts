/** A growable ring-buffer FIFO: O(1) push and shift, unlike `Array.prototype.shift` on big arrays. */
export class Deque<T> {
  #items: (T | undefined)[] = new Array<T | undefined>(16);
  #head = 0;
  #length = 0;

  get length(): number {
    return this.#length;
  }

  push(item: T): void {
    if (this.#length === this.#items.length) this.#grow();
    this.#items[(this.#head + this.#length) & (this.#items.length - 1)] = item;
    this.#length += 1;
  }

  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined;
    this.#head = (this.#head + 1) & (this.#items.length - 1);
    this.#length -= 1;
    return item;
  }

  clear(): void {
    this.#items = new Array<T | undefined>(16);
    this.#head = 0;
    this.#length = 0;
  }

  #grow(): void {
    // Capacity stays a power of two so index wrapping is a mask.
    const next = new Array<T | undefined>(this.#items.length * 2);
    for (let i = 0; i < this.#length; i += 1) {
      next[i] = this.#items[(this.#head + i) & (this.#items.length - 1)];
    }
    this.#items = next;
    this.#head = 0;
  }
}

import type { Clock, TimerHandle } from './clock.js';

/**
 * Fixed-size buffers, recycled. Bytes that must outlive a request's first moments (the 401 replay
 * copy of an upload) are copied into blocks from here instead of holding the socket's own chunks:
 * held chunks survive scavenges, are promoted, and their memory comes back only at a full
 * collection, which V8 starts on the growth of ArrayBuffer memory (finding 28). A recycled block
 * is allocated once, so the chunks die young and the blocks' memory does not grow.
 *
 * Blocks a whole `idleMs` went unused are dropped (at most one timer, armed only while blocks are
 * free), so a burst of uploads does not leave its peak behind in an idle process.
 */
export class BlockPool {
  readonly #free: Buffer[] = [];
  /** Fewest free blocks since the last trim: these were not needed during the whole interval. */
  #lowWater = 0;
  #allocated = 0;
  #timer: TimerHandle | undefined;

  constructor(readonly blockSize: number, private readonly clock: Clock, readonly idleMs: number) {}

  /** Blocks that exist: in use plus free (`× blockSize` is the pool's memory). */
  get allocated(): number {
    return this.#allocated;
  }

  /** Blocks waiting for reuse. */
  get free(): number {
    return this.#free.length;
  }

  /** A block with arbitrary content, to be written before it is read. */
  acquire(): Buffer {
    const block = this.#free.pop();
    if (block) {
      if (this.#free.length < this.#lowWater) this.#lowWater = this.#free.length;
      return block;
    }
    this.#allocated++;
    // Not from Node's shared 8 KiB pool: a block is handed back whole.
    return Buffer.allocUnsafeSlow(this.blockSize);
  }

  /** Hands a block back. It must not be used afterwards: its next holder overwrites it. */
  release(block: Buffer): void {
    this.#free.push(block);
    this.#timer ??= this.clock.setTimeout(this.#trim, this.idleMs);
  }

  /** Drops every free block (the sidecar's stop). */
  clear(): void {
    this.#allocated -= this.#free.length;
    this.#free.length = 0;
    this.#lowWater = 0;
    this.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  readonly #trim = (): void => {
    // The free list is a stack: its bottom holds the blocks that went longest unused.
    const unused = Math.min(this.#lowWater, this.#free.length);
    this.#free.splice(0, unused);
    this.#allocated -= unused;
    this.#lowWater = this.#free.length;
    this.#timer = this.#free.length > 0 ? this.clock.setTimeout(this.#trim, this.idleMs) : undefined;
  };
}

/**
 * One step of a start sequence, run by `RunGroup.run` (run-group.ts): the parts start in the order
 * listed, each once the one before has finished, and stop in reverse order.
 */
export interface Part {
  /** Names the step, for a reader of the sequence. */
  readonly name: string;
  /** Starts the step. A failure (or a stop requested meanwhile) ends the sequence there. */
  start(): Promise<void> | void;
  /**
   * Undoes what `start` did; registered once `start` has settled. Absent for a step that holds
   * nothing, or registers its own pieces' stops in the group as it makes them.
   */
  stop?(): Promise<void> | void;
}

/**
 * A life cycle as a table of allowed moves. Both roles keep their task states this way;
 * a move is applied by a conditional UPDATE guarded by `sourcesOf(target)`, so two racing
 * requests or replicas can never both move one record out of the same state.
 */
export class StateMachine<S extends string> {
  constructor(
    private readonly moves: Readonly<Record<S, readonly S[]>>,
    readonly finalStates: readonly S[],
  ) {}

  isFinal(state: S): boolean {
    return this.finalStates.includes(state);
  }

  canTransition(from: S, to: S): boolean {
    return this.moves[from].includes(to);
  }

  /** The states a record may be in for a move to `to` to apply. */
  sourcesOf(to: S): S[] {
    return (Object.keys(this.moves) as S[]).filter((from) => this.canTransition(from, to));
  }
}

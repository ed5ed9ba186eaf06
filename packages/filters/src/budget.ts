import { LIMITS } from './limits';

/** Thrown when an evaluation spends its budget; callers treat it as "does not match". */
export class BudgetExceededError extends Error {
  constructor(what: string) {
    super(`filter evaluation budget exceeded (${what})`);
    this.name = 'BudgetExceededError';
  }
}

/** Counts the values one evaluation visits, so that no payload/filter pair can hang the router. */
export class Budget {
  private steps = 0;
  constructor(readonly maxSteps: number = LIMITS.maxSteps) {}

  tick(n = 1): void {
    this.steps += n;
    if (this.steps > this.maxSteps) throw new BudgetExceededError(`more than ${this.maxSteps} steps`);
  }

  get used(): number {
    return this.steps;
  }
}

import { getMetadataStorage, MetadataStorage } from 'class-validator';

type ValidationMetadata = Parameters<MetadataStorage['addValidationMetadata']>[0];
type Lookup = (target: object, targetSchema: string | undefined, always: boolean, strictGroups: boolean, groups?: string[]) => ValidationMetadata[];

let installed = false;
let generation = 0;

/** Counts the rules added since the lookups were kept: what was derived from them is stale when it moved. */
export function ruleGeneration(): number {
  return generation;
}

/**
 * class-validator finds a class's rules anew on every validation (and Nest's pipe once more
 * per body holding an object): it filters the class's rules and tests the class against every
 * other validated class for inheritance, some hundred `instanceof`s here, for each DTO and each
 * nested object of every request. A class's rules are fixed once its module has loaded, so the
 * answer is kept per class and options, frozen so that no caller can change what the next one
 * gets. A rule added later (`registerDecorator`, `@nestjs/mapped-types` building a class) drops
 * every kept answer. Installed once, on the storage every copy of class-validator shares.
 */
export function keepRuleLookups(): void {
  if (installed) return;
  installed = true;
  const storage = getMetadataStorage();
  const lookup = storage.getTargetValidationMetadatas.bind(storage) as Lookup;
  const add = storage.addValidationMetadata.bind(storage);
  let kept = new WeakMap<object, Map<string, readonly ValidationMetadata[]>>();
  storage.addValidationMetadata = (metadata: ValidationMetadata): void => {
    kept = new WeakMap();
    generation++;
    add(metadata);
  };
  (storage as unknown as { getTargetValidationMetadatas: Lookup }).getTargetValidationMetadatas = (target, targetSchema, always, strictGroups, groups) => {
    if (typeof target !== 'function') return lookup(target, targetSchema, always, strictGroups, groups);
    const key = `${targetSchema ?? ''}\u0000${always}\u0000${strictGroups}\u0000${groups ? JSON.stringify(groups) : ''}`;
    let answers = kept.get(target);
    if (!answers) kept.set(target, (answers = new Map()));
    let answer = answers.get(key);
    if (!answer) answers.set(key, (answer = Object.freeze(lookup(target, targetSchema, always, strictGroups, groups))));
    return answer as ValidationMetadata[];
  };
}

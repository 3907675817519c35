/**
 * The house as its imports draw it: every non-test source file of `src/` with the files it
 * imports (static and dynamic, type-only included: a type import ties a reader to the file too),
 * and the rooms (the folders of `src/`) with the rooms their files import. Read with the
 * TypeScript compiler's own import scanner, so what counts is what the compiler sees.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

/** The import graph of `src/`. */
export interface HouseGraph {
  /** Each source file (path from the repository root, `/`-separated) and the files it imports. */
  files: Map<string, Set<string>>;
  /** Each room and the other rooms its files import. */
  rooms: Map<string, Set<string>>;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts')
      ? [path]
      : [];
  });
}

/** The file a relative specifier names (`./x.js` → `x.ts`, a folder → its `index.ts`). */
function resolveSpecifier(from: string, specifier: string): string | undefined {
  const base = resolve(dirname(from), specifier);
  const candidates = [
    base.replace(/\.js$/, '.ts'),
    base.endsWith('.ts') ? base : `${base}.ts`,
    join(base, 'index.ts'),
  ];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile());
}

/** The room of a file: the first folder under `src/` (`index.ts` and `nats.ts` are the doors). */
export function roomOf(file: string): string {
  const parts = file.split('/');
  return parts.length > 2 ? parts[1]! : file;
}

/** Reads the import graph of `<root>/src`. */
export function readHouse(root: string): HouseGraph {
  const files = new Map<string, Set<string>>();
  const rooms = new Map<string, Set<string>>();
  const name = (path: string): string => relative(root, path).split(sep).join('/');
  for (const path of sourceFiles(join(root, 'src'))) {
    const info = ts.preProcessFile(readFileSync(path, 'utf8'), true, true);
    const targets = new Set<string>();
    for (const { fileName } of info.importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = resolveSpecifier(path, fileName);
      if (target !== undefined) targets.add(name(target));
    }
    const file = name(path);
    files.set(file, targets);
    const room = roomOf(file);
    if (!rooms.has(room)) rooms.set(room, new Set());
    for (const target of targets) {
      const other = roomOf(target);
      if (other !== room) rooms.get(room)!.add(other);
    }
  }
  return { files, rooms };
}

/**
 * The import circles among files: each strongly connected set of two or more files (or a file
 * that imports itself), its members sorted (Tarjan's algorithm).
 */
export function fileCircles(graph: HouseGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  let next = 0;
  const visit = (file: string): void => {
    index.set(file, next);
    low.set(file, next);
    next += 1;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.files.get(file) ?? []) {
      if (!graph.files.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const members: string[] = [];
    for (;;) {
      const member = stack.pop()!;
      onStack.delete(member);
      members.push(member);
      if (member === file) break;
    }
    if (members.length > 1 || graph.files.get(file)!.has(file)) circles.push(members.sort());
  };
  for (const file of [...graph.files.keys()].sort()) if (!index.has(file)) visit(file);
  return circles;
}

/**
 * The repository's Dockerfile read into its stages (parsed by `dockerfile-ast`, the parser of
 * the Docker language server), for the tests that lint it and run its commands natively.
 */
import { readFileSync } from 'node:fs';
import { DockerfileParser, type Instruction } from 'dockerfile-ast';
import { ROOT } from './deploy-native.js';

/** One instruction: its keyword, its arguments (flags apart) and its `--flag=value`s. */
export interface DockerInstruction {
  keyword: string;
  args: string;
  flags: Record<string, string>;
  line: number;
}

/** One build stage: `FROM <from> AS <name>` and what follows it. */
export interface DockerStage {
  name: string | undefined;
  from: string;
  instructions: DockerInstruction[];
}

function flagsOf(instruction: Instruction): Record<string, string> {
  const withFlags = instruction as Instruction & {
    getFlags?: () => { getName(): string; getValue(): string | null }[];
  };
  return Object.fromEntries(
    (withFlags.getFlags?.() ?? []).map((f) => [f.getName(), f.getValue() ?? '']),
  );
}

/** Parses a Dockerfile (the repository's by default) into its stages; ARGs before FROM apart. */
export function readDockerfile(path = `${ROOT}Dockerfile`): {
  args: Record<string, string>;
  stages: DockerStage[];
} {
  const file = DockerfileParser.parse(readFileSync(path, 'utf8'));
  const args: Record<string, string> = {};
  const stages: DockerStage[] = [];
  for (const instruction of file.getInstructions()) {
    const keyword = instruction.getKeyword();
    const entry: DockerInstruction = {
      keyword,
      args: (instruction.getArgumentsContent() ?? '').replace(/\s+/gu, ' ').trim(),
      flags: flagsOf(instruction),
      line: instruction.getRange().start.line + 1,
    };
    if (keyword === 'FROM') {
      const [from, as, name] = entry.args.split(' ');
      stages.push({
        name: as?.toUpperCase() === 'AS' ? name : undefined,
        from: from ?? '',
        instructions: [],
      });
    } else if (stages.length === 0) {
      if (keyword === 'ARG') {
        const [name, value] = entry.args.split('=');
        args[name!] = value ?? '';
      }
    } else {
      stages.at(-1)!.instructions.push(entry);
    }
  }
  return { args, stages };
}

/** The exec form (`["a", "b"]`) of an instruction's arguments, after `CMD` for HEALTHCHECK. */
export function execForm(instruction: DockerInstruction): string[] {
  const json =
    instruction.keyword === 'HEALTHCHECK'
      ? instruction.args.replace(/^CMD /u, '')
      : instruction.args;
  const parsed = JSON.parse(json) as unknown;
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string')) {
    throw new Error(`line ${instruction.line}: ${instruction.keyword} is not in exec form`);
  }
  return parsed;
}

/** The last instruction of `keyword` in a stage (as Docker applies it), if any. */
export function last(stage: DockerStage, keyword: string): DockerInstruction | undefined {
  return stage.instructions.filter((i) => i.keyword === keyword).at(-1);
}

/** The `ENV` variables a stage sets (both `K=V` forms on one line). */
export function envOf(stage: DockerStage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const i of stage.instructions.filter((x) => x.keyword === 'ENV')) {
    for (const [, name, value] of i.args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=(\S*)/gu)) {
      env[name!] = value!;
    }
  }
  return env;
}

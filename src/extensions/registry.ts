import { FleetgateError } from '../protocol/index.js';
import { canonicalExtensionUri, readDeclarations, type Declarations } from '../protocol/index.js';
import type { Extension, RegisterOptions, RegisteredExtension } from './types.js';

/**
 * The extensions a Fleetgate client knows, in registration order. An instance, never a module
 * singleton: each client (and each test) builds its own.
 *
 * @example
 * ```ts
 * const registry = new ExtensionRegistry();
 * registry.register(createBlastExtension({ blast }));
 * registry.register(createEffectDomainExtension({ bus }), { required: true });
 * registry.forCard(card); // the registered extensions this card declares
 * ```
 */
export class ExtensionRegistry {
  readonly #entries: RegisteredExtension[] = [];
  readonly #byUri = new Map<string, RegisteredExtension>();
  #version = 0;

  /** Increments on every registration, so callers can cache {@link forCard} results. */
  get version(): number {
    return this.#version;
  }

  /**
   * Adds an extension after the ones already registered (its `before` runs after theirs, its
   * `after` before theirs).
   *
   * @throws FleetgateError `FLEETGATE_EXTENSION_ALREADY_REGISTERED` when an extension with the same
   * (canonical) URI is already registered.
   */
  register(extension: Extension, options: RegisterOptions = {}): this {
    const uri = canonicalExtensionUri(extension.uri);
    if (this.#byUri.has(uri)) {
      throw new FleetgateError(
        'FLEETGATE_EXTENSION_ALREADY_REGISTERED',
        `An extension with URI ${uri} is already registered.`,
        { details: { uri } },
      );
    }
    const entry: RegisteredExtension = Object.freeze({
      extension,
      required: options.required ?? false,
    });
    this.#entries.push(entry);
    this.#byUri.set(uri, entry);
    this.#version += 1;
    return this;
  }

  /**
   * The registered extensions a card declares, in registration order. A card matches an extension
   * by exact URI, or by an older alias of it (`worldstate-delta-v1` → `effect-domain-v1`).
   * Accepts the card itself (SDK object, v1.0 or v0.3 JSON) or its already-read declarations.
   */
  forCard(card: unknown): RegisteredExtension[] {
    return this.forDeclarations(readDeclarations(card));
  }

  /** {@link forCard} for declarations already read with `readDeclarations`. */
  forDeclarations(declarations: Pick<Declarations, 'extensions'>): RegisteredExtension[] {
    const declared = new Set(declarations.extensions.map((uri) => canonicalExtensionUri(uri)));
    return this.#entries.filter((e) => declared.has(canonicalExtensionUri(e.extension.uri)));
  }

  /** The registered extension with this URI (or an alias of it). */
  get(uri: string): RegisteredExtension | undefined {
    return this.#byUri.get(canonicalExtensionUri(uri));
  }

  /** Every registered extension, in registration order. */
  list(): RegisteredExtension[] {
    return [...this.#entries];
  }
}

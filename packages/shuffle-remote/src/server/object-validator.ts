import { MAX_BUFFER_SIZE_BYTES, MAX_SUBPARTITIONS } from '@weft/shuffle-api';
import { BLOCK_HEADER_BYTES, BLOCK_KIND_DATA, BLOCK_KIND_EVENT, CODEC_LZ4, CODEC_RAW, readU32, readU64 } from '../format/block-codec.js';
import { crc32c } from '../format/checksum.js';
import { FOOTER_BYTES, INDEX_ENTRY_BYTES, INDEX_HEADER_BYTES, type IndexLocation, decodeFooter } from '../format/partition-index.js';
import { WireError, wireError } from '../protocol/wire-errors.js';

/** Most regions an object may have (the writer spills one region per memory budget). */
const MAX_REGIONS = 1 << 24;
const INDEX_MAGIC = [0x57, 0x45, 0x46, 0x54, 0x49, 0x44, 0x58, 0x31]; // WEFTIDX1

type State = 'block-header' | 'payload' | 'index-header' | 'entries' | 'footer' | 'done';

/**
 * Checks a pushed partition data object as it streams in, without holding it: every block header is
 * sane and every block's CRC32C matches; the index header (found where a block would start) is intact;
 * every index entry points inside the data; the footer matches the index; nothing follows the footer.
 * With `checksums` off, block payloads are skipped, not summed: structure only (readers still verify
 * every block). Memory: one 48-byte staging buffer. Errors are MALFORMED_BODY wire errors (400, SHF_ERR_DATA_CORRUPTED)
 * naming the byte offset; `finish()` refuses a body that ended early.
 */
export class ObjectValidator {
  private state: State = 'block-header';
  private position = 0;
  private readonly stage = new Uint8Array(FOOTER_BYTES);
  private staged = 0;
  private payloadRemaining = 0;
  private crc = 0;
  private expectedCrc = 0;
  private blockStart = 0;
  private blocks = 0;
  private indexOffset = 0;
  private subpartitions = 0;
  private regions = 0;
  private entriesRemaining = 0;
  private location: IndexLocation | undefined;

  constructor(private readonly checksums = true) {}

  /** Bytes checked so far. */
  get bytes(): number {
    return this.position;
  }

  update(chunk: Uint8Array): void {
    let i = 0;
    const length = chunk.length;
    while (i < length) {
      if (this.state === 'payload') {
        const take = Math.min(this.payloadRemaining, length - i);
        if (this.checksums) this.crc = crc32c(chunk.subarray(i, i + take), this.crc);
        i += take;
        this.position += take;
        this.payloadRemaining -= take;
        if (this.payloadRemaining === 0) this.endBlock();
        continue;
      }
      if (this.state === 'done') throw this.malformed('bytes follow the footer');
      const need = this.itemBytes();
      const take = Math.min(need - this.staged, length - i);
      this.stage.set(chunk.subarray(i, i + take), this.staged);
      this.staged += take;
      i += take;
      this.position += take;
      if (this.staged === need) this.onItem();
    }
  }

  /** The index location once the whole object has been seen; throws for a body that ended early. */
  finish(): IndexLocation {
    if (this.state !== 'done' || this.location === undefined) {
      throw this.malformed(`the body ends inside ${this.describeState()} (truncated)`);
    }
    return this.location;
  }

  private itemBytes(): number {
    switch (this.state) {
      case 'block-header':
        return BLOCK_HEADER_BYTES;
      case 'index-header':
        return INDEX_HEADER_BYTES;
      case 'entries':
        return INDEX_ENTRY_BYTES;
      default:
        return FOOTER_BYTES;
    }
  }

  private onItem(): void {
    const s = this.stage;
    switch (this.state) {
      case 'block-header': {
        if (INDEX_MAGIC.every((byte, k) => s[k] === byte)) {
          this.state = 'index-header';
          this.indexOffset = this.position - BLOCK_HEADER_BYTES;
          return; // keep the 16 staged bytes: the index header is 32
        }
        this.blockStart = this.position - BLOCK_HEADER_BYTES;
        const kind = s[4]!;
        const codec = s[5]!;
        const rawLength = readU32(s, 8);
        const storedLength = readU32(s, 12);
        if (kind !== BLOCK_KIND_DATA && kind !== BLOCK_KIND_EVENT) throw this.malformed(`unknown block kind ${kind}`, this.blockStart);
        if (s[6] !== 0 || s[7] !== 0) throw this.malformed('block flags are not zero', this.blockStart);
        if (rawLength > MAX_BUFFER_SIZE_BYTES) throw this.malformed(`block of ${rawLength} bytes is larger than ${MAX_BUFFER_SIZE_BYTES}`, this.blockStart);
        if (codec === CODEC_RAW ? storedLength !== rawLength : codec !== CODEC_LZ4 || storedLength >= rawLength) {
          throw this.malformed(`block lengths (codec ${codec}, raw ${rawLength}, stored ${storedLength}) are inconsistent`, this.blockStart);
        }
        this.expectedCrc = readU32(s, 0);
        if (this.checksums) this.crc = crc32c(s.subarray(4, BLOCK_HEADER_BYTES));
        this.payloadRemaining = storedLength;
        this.staged = 0;
        this.state = 'payload';
        if (storedLength === 0) this.endBlock();
        return;
      }
      case 'index-header': {
        if (readU32(s, 28) !== crc32c(s.subarray(0, 28))) throw this.malformed('index header checksum mismatch', this.indexOffset);
        this.subpartitions = readU32(s, 8);
        this.regions = readU32(s, 12);
        if (readU32(s, 16) !== INDEX_ENTRY_BYTES) throw this.malformed('index entry size is not 16', this.indexOffset);
        if (this.subpartitions < 1 || this.subpartitions > MAX_SUBPARTITIONS) {
          throw this.malformed(`index names ${this.subpartitions} subpartitions`, this.indexOffset);
        }
        if (this.regions > MAX_REGIONS) throw this.malformed(`index names ${this.regions} regions`, this.indexOffset);
        this.entriesRemaining = this.subpartitions * this.regions;
        this.staged = 0;
        this.state = this.entriesRemaining === 0 ? 'footer' : 'entries';
        return;
      }
      case 'entries': {
        const offset = readU64(s, 0);
        const length = readU32(s, 8);
        if (offset + length > this.indexOffset) throw this.malformed('an index entry points past the data', this.position - INDEX_ENTRY_BYTES);
        this.staged = 0;
        this.entriesRemaining--;
        if (this.entriesRemaining === 0) this.state = 'footer';
        return;
      }
      case 'footer': {
        const location = decodeFooter(s.subarray(0, FOOTER_BYTES));
        const indexLength = INDEX_HEADER_BYTES + this.subpartitions * this.regions * INDEX_ENTRY_BYTES;
        if (
          location === undefined ||
          location.numberOfSubpartitions !== this.subpartitions ||
          location.numberOfRegions !== this.regions ||
          location.indexOffset !== this.indexOffset ||
          location.indexLength !== indexLength
        ) {
          throw this.malformed('the footer is damaged or does not match the index', this.position - FOOTER_BYTES);
        }
        this.location = location;
        this.staged = 0;
        this.state = 'done';
        return;
      }
      default:
        return;
    }
  }

  private endBlock(): void {
    if (this.checksums && (this.crc >>> 0) !== this.expectedCrc) throw this.malformed(`block ${this.blocks} fails its CRC32C`, this.blockStart);
    this.blocks++;
    this.state = 'block-header';
  }

  private describeState(): string {
    switch (this.state) {
      case 'payload':
        return `block ${this.blocks}`;
      case 'block-header':
        return this.staged === 0 ? 'the data, before the index' : `the header of block ${this.blocks}`;
      case 'index-header':
        return 'the index header';
      case 'entries':
        return 'the index entries';
      default:
        return 'the footer';
    }
  }

  private malformed(problem: string, at = this.position): Error {
    return wireError(WireError.MALFORMED_BODY, `malformed partition data object at byte ${at}: ${problem}`, { block: at });
  }
}

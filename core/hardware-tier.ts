import { fail, pass, type Check } from './check.js';

/**
 * docs/protocol.md §1.6 worker tiers from declared hardware. A worker declares both its hardware and its tier; the
 * registry refuses a tier the hardware cannot support. This is a consistency check on a self-report, not
 * attestation: a worker that lies about its GPU is found out by its jobs (failures demote it, see
 * core/worker-trust.ts), not here.
 *
 * The rule (the highest tier the hardware supports):
 * - tier 3 "professional GPU": a datacenter or workstation GPU by name (PROFESSIONAL_GPU) with at least
 *   16 GB of VRAM (T4, A2 and better), or any GPU with at least 40 GB (no gaming card has that much, so an
 *   unknown name with that much memory is workstation class: large Apple unified memory counts here).
 *   Gaming cards stay tier 2 even with 24–32 GB (RTX 3090, 4090, 5090): the protocol names tier 3 by class (docs/protocol.md §1.6).
 * - tier 2 "gaming PC (RTX 3060 or better)": any GPU with at least 8 GB of VRAM. The RTX 3060 ships with
 *   8 or 12 GB, and VRAM is what decides which models and scenes fit; compute speed past that is the
 *   trust ladder's business.
 * - tier 1 "any laptop (CPU)": everything else, including CPU-only devices.
 */
export type HardwareTier = 1 | 2 | 3;

/** The hardware fields this check reads (the registry's WorkerHardware has these and more). */
export interface DeclaredHardware {
  gpu: string | null;
  vram_gb: number;
  ram_gb: number;
  cores: number;
}

export const TIER_2_MIN_VRAM_GB = 8;
export const TIER_3_MIN_VRAM_GB_PROFESSIONAL = 16;
export const TIER_3_MIN_VRAM_GB_ANY = 40;

/**
 * Datacenter and workstation GPU families. NVIDIA's workstation RTX cards are numbered x000 (RTX 4000,
 * RTX 6000 Ada, RTX A6000, Quadro RTX 8000); its gaming cards never are (3060 … 5090), which is what keeps
 * "RTX 4090" out while "RTX 6000" is in.
 */
const PROFESSIONAL_GPU = new RegExp(
  [
    String.raw`\b(?:A100|A800|A40|A30|A16|A10G?|A2|H100|H200|H800|GH200|B100|B200|GB200|L4|L20|L40S?|V100|P100|T4)\b`,
    String.raw`\bRTX\s*(?:PRO\b|A\d{3,4}\b|[2-8]000\b)`,
    String.raw`\b(?:Quadro|Tesla|Instinct|Radeon\s*Pro\s*W\d+|Data\s*Center\s*GPU)`,
    String.raw`\bMI\d{2,3}[A-Z]?\b`,
  ].join('|'),
  'i',
);

export const isProfessionalGpu = (gpu: string): boolean => PROFESSIONAL_GPU.test(gpu);

/** The highest docs/protocol.md §1.6 tier the hardware supports. */
export function supportedHardwareTier(hardware: DeclaredHardware): HardwareTier {
  const { gpu, vram_gb: vram } = hardware;
  if (gpu === null) return 1;
  if (vram >= TIER_3_MIN_VRAM_GB_ANY || (vram >= TIER_3_MIN_VRAM_GB_PROFESSIONAL && isProfessionalGpu(gpu))) return 3;
  if (vram >= TIER_2_MIN_VRAM_GB) return 2;
  return 1;
}

/**
 * The declared tier, when the declared hardware is coherent and supports it; else 400 `invalid_worker`
 * naming what is missing. A lower tier than the hardware supports is accepted (an owner may offer less).
 */
export function checkHardwareTier(hardware: DeclaredHardware, declared: HardwareTier): Check<HardwareTier> {
  if (hardware.gpu === null && hardware.vram_gb !== 0) {
    return fail('invalid_worker', 'hardware.vram_gb must be 0 when hardware.gpu is null (no GPU)');
  }
  const supported = supportedHardwareTier(hardware);
  if (declared <= supported) return pass(declared);
  const needs =
    declared === 3
      ? `a professional GPU with at least ${TIER_3_MIN_VRAM_GB_PROFESSIONAL} GB of VRAM, or any GPU with at least ${TIER_3_MIN_VRAM_GB_ANY} GB`
      : `a GPU with at least ${TIER_2_MIN_VRAM_GB} GB of VRAM (RTX 3060 class or better)`;
  return fail(
    'invalid_worker',
    `hardware_tier ${declared} needs ${needs}; the declared hardware supports tier ${supported}`,
  );
}

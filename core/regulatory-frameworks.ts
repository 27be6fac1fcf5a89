import type { AgentTier } from './tiers.js';

/**
 * The regulatory frameworks gate 2 attaches to a location, and the highest agent tier each lets act
 * autonomously there. The tiers are a Geofabric policy choice, not a legal reading; the rule is:
 *
 * - `trusted`: AI-specific law that demands human oversight, risk management or bias audits of
 *   consequential automated decisions (EU AI Act art. 14, Colorado AI Act, Italy's AI law, Korea's AI
 *   Basic Act, China's generative-AI measures). Above `trusted` an agent would act without the
 *   oversight such law assumes.
 * - `certified`: comprehensive personal-data law that limits solely automated decisions or profiling
 *   (GDPR art. 22 and its national companions, UK GDPR, nFADP art. 21, LGPD art. 20, CCPA/CPRA's ADMT
 *   rules, PIPL art. 24 …) or general unfairness law applied to AI (FTC Act s. 5): autonomous
 *   processing needs an agent with a long, verified record.
 * - `sovereign` (no cap): frameworks about identity, signatures or data security that do not govern
 *   automated decisions (eIDAS 2, NY SHIELD Act). They are listed so reports name them.
 *
 * A location whose law we do not know gets DEFAULT_MAX_AUTONOMY_TIER, which equals the strictest cap
 * in the table: not knowing the law must never be more permissive than knowing it.
 */
export interface RegulatoryFramework {
  id: string;
  name: string;
  max_autonomy_tier: AgentTier;
}

export const DEFAULT_MAX_AUTONOMY_TIER: AgentTier = 'trusted';

const framework = (id: string, name: string, max_autonomy_tier: AgentTier): RegulatoryFramework =>
  Object.freeze({ id, name, max_autonomy_tier });

export const REGULATORY_FRAMEWORKS = Object.freeze({
  // EU and EEA
  GDPR: framework('GDPR', 'General Data Protection Regulation (EU) 2016/679', 'certified'),
  EU_AI_ACT: framework('EU_AI_ACT', 'Artificial Intelligence Act (EU) 2024/1689', 'trusted'),
  EIDAS2: framework('EIDAS2', 'European Digital Identity Framework, eIDAS 2 (EU) 2024/1183', 'sovereign'),
  // EU member states
  IT_AI_LAW: framework('IT_AI_LAW', 'Italian law on artificial intelligence (Legge 132/2025)', 'trusted'),
  IT_PRIVACY_CODE: framework(
    'IT_PRIVACY_CODE',
    'Codice in materia di protezione dei dati personali (D.Lgs. 196/2003)',
    'certified',
  ),
  DE_BDSG: framework('DE_BDSG', 'Bundesdatenschutzgesetz (BDSG)', 'certified'),
  FR_LIL: framework('FR_LIL', 'Loi Informatique et Libertés (loi n° 78-17)', 'certified'),
  ES_LOPDGDD: framework(
    'ES_LOPDGDD',
    'Ley Orgánica 3/2018 de Protección de Datos y garantía de los derechos digitales',
    'certified',
  ),
  // Rest of Europe
  CH_NFADP: framework('CH_NFADP', 'Swiss Federal Act on Data Protection (nFADP)', 'certified'),
  UK_GDPR: framework('UK_GDPR', 'UK GDPR and Data Protection Act 2018', 'certified'),
  // United States: no federal privacy or AI statute, so the FTC's unfairness power is the baseline.
  US_FTC_ACT: framework('US_FTC_ACT', 'FTC Act section 5 (unfair or deceptive practices)', 'certified'),
  US_CA_CCPA: framework('US_CA_CCPA', 'California Consumer Privacy Act as amended by the CPRA', 'certified'),
  US_CO_AI_ACT: framework('US_CO_AI_ACT', 'Colorado Artificial Intelligence Act (SB 24-205)', 'trusted'),
  US_CO_CPA: framework('US_CO_CPA', 'Colorado Privacy Act', 'certified'),
  // NYC Local Law 144 is city law; cells resolve to states at best, so New York lists the state act.
  US_NY_SHIELD: framework('US_NY_SHIELD', 'New York SHIELD Act', 'sovereign'),
  US_TX_TDPSA: framework('US_TX_TDPSA', 'Texas Data Privacy and Security Act', 'certified'),
  US_TX_TRAIGA: framework('US_TX_TRAIGA', 'Texas Responsible Artificial Intelligence Governance Act', 'certified'),
  // Elsewhere
  BR_LGPD: framework('BR_LGPD', 'Lei Geral de Proteção de Dados (LGPD)', 'certified'),
  SG_PDPA: framework('SG_PDPA', 'Personal Data Protection Act 2012 (Singapore)', 'certified'),
  CA_PIPEDA: framework(
    'CA_PIPEDA',
    'Personal Information Protection and Electronic Documents Act (Canada)',
    'certified',
  ),
  CN_PIPL: framework('CN_PIPL', 'Personal Information Protection Law (China)', 'certified'),
  CN_GENAI: framework('CN_GENAI', 'Interim Measures for the Management of Generative AI Services (China)', 'trusted'),
  HK_PDPO: framework('HK_PDPO', 'Personal Data (Privacy) Ordinance (Hong Kong)', 'certified'),
  MO_PDPA: framework('MO_PDPA', 'Personal Data Protection Act (Macao, Law 8/2005)', 'certified'),
  JP_APPI: framework('JP_APPI', 'Act on the Protection of Personal Information (Japan)', 'certified'),
  KR_PIPA: framework('KR_PIPA', 'Personal Information Protection Act (Korea)', 'certified'),
  KR_AI_BASIC_ACT: framework('KR_AI_BASIC_ACT', 'Framework Act on Artificial Intelligence (Korea)', 'trusted'),
  IN_DPDP: framework('IN_DPDP', 'Digital Personal Data Protection Act 2023 (India)', 'certified'),
  AU_PRIVACY_ACT: framework('AU_PRIVACY_ACT', 'Privacy Act 1988 (Australia)', 'certified'),
  NZ_PRIVACY_ACT: framework('NZ_PRIVACY_ACT', 'Privacy Act 2020 (New Zealand)', 'certified'),
  ZA_POPIA: framework('ZA_POPIA', 'Protection of Personal Information Act (South Africa)', 'certified'),
} satisfies Record<string, RegulatoryFramework>);

export type FrameworkId = keyof typeof REGULATORY_FRAMEWORKS;

/** Jurisdiction groups a location can belong to (besides its country and subdivision). */
export const JURISDICTION_GROUPS = ['EU', 'EEA'] as const;
export type JurisdictionGroup = (typeof JURISDICTION_GROUPS)[number];

/** EEA members outside the EU; the EEA took in GDPR but not yet the AI Act or eIDAS 2. */
export const EEA_NON_EU_COUNTRIES: readonly string[] = ['IS', 'LI', 'NO'];

export const GROUP_FRAMEWORKS: Record<JurisdictionGroup, readonly FrameworkId[]> = {
  EU: ['GDPR', 'EU_AI_ACT', 'EIDAS2'],
  EEA: ['GDPR'],
};

/** National law on top of the group frameworks, keyed by ISO 3166-1 alpha-2. */
export const NATIONAL_FRAMEWORKS: Readonly<Partial<Record<string, readonly FrameworkId[]>>> = {
  IT: ['IT_AI_LAW', 'IT_PRIVACY_CODE'],
  DE: ['DE_BDSG'],
  FR: ['FR_LIL'],
  ES: ['ES_LOPDGDD'],
  CH: ['CH_NFADP'],
  GB: ['UK_GDPR'],
  US: ['US_FTC_ACT'],
  BR: ['BR_LGPD'],
  SG: ['SG_PDPA'],
  CA: ['CA_PIPEDA'],
  CN: ['CN_PIPL', 'CN_GENAI'],
  JP: ['JP_APPI'],
  KR: ['KR_PIPA', 'KR_AI_BASIC_ACT'],
  IN: ['IN_DPDP'],
  AU: ['AU_PRIVACY_ACT'],
  NZ: ['NZ_PRIVACY_ACT'],
  ZA: ['ZA_POPIA'],
};

/**
 * Sub-national law, keyed by subdivision code. `replaces_national` marks places where the national
 * law does not apply (Hong Kong and Macao have their own data-protection regimes).
 */
export const SUBDIVISION_FRAMEWORKS: Readonly<
  Partial<Record<string, { frameworks: readonly FrameworkId[]; replaces_national?: true }>>
> = {
  'US-CA': { frameworks: ['US_CA_CCPA'] },
  'US-CO': { frameworks: ['US_CO_AI_ACT', 'US_CO_CPA'] },
  'US-NY': { frameworks: ['US_NY_SHIELD'] },
  'US-TX': { frameworks: ['US_TX_TDPSA', 'US_TX_TRAIGA'] },
  'CN-HK': { frameworks: ['HK_PDPO'], replaces_national: true },
  'CN-MO': { frameworks: ['MO_PDPA'], replaces_national: true },
};

/** ISO 3166-2:US codes of the states, DC and the outlying areas. */
export const US_SUBDIVISION_CODES: ReadonlySet<string> = new Set(
  (
    'AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH ' +
    'OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC AS GU MP PR UM VI'
  )
    .split(' ')
    .map((state) => `US-${state}`),
);

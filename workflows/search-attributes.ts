import { SearchAttributeType, defineSearchAttributeKey } from '@temporalio/common';

// Custom search attributes of Geofabric workflows. A dev server registers them at start
// (scripts/engines.sh, SEARCH_ATTRIBUTES); a cluster needs `temporal operator search-attribute create`.
// A unit test keeps the two lists equal.

/** The H3 cell a job runs in: lists jobs by cell (`H3Cell = '861e8050fffffff'`). */
export const H3_CELL = defineSearchAttributeKey('H3Cell', SearchAttributeType.KEYWORD);
/** Public key of the requester (64 hex). */
export const REQUESTER = defineSearchAttributeKey('Requester', SearchAttributeType.KEYWORD);
export const JOB_STATUS = defineSearchAttributeKey('JobStatus', SearchAttributeType.KEYWORD);
export const STEP_TYPES = defineSearchAttributeKey('StepTypes', SearchAttributeType.KEYWORD_LIST);
export const EPOCH = defineSearchAttributeKey('Epoch', SearchAttributeType.INT);

export const SEARCH_ATTRIBUTE_KEYS = [H3_CELL, REQUESTER, JOB_STATUS, STEP_TYPES, EPOCH] as const;

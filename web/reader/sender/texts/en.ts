import type { Language } from '../../../../src/kernel/languages.ts';
import { en as reader } from '../../texts/en.ts';

/**
 * Every word the sender's page shows, in English; the translations (de.ts, fr.ts, it.ts) `satisfy` the type
 * taken from this file, as the reader's texts do. The sentences for errors, the fallbacks and the units are
 * the reader's, with the few that would say the wrong thing to a sender said again.
 */
export const en = {
  lang: 'en' as Language,
  appName: 'Sealpost',
  loading: 'Loading…',
  skipToContent: 'Skip to content',
  language: 'Language',

  signIn: {
    title: 'Your sealed messages',
    intro:
      'See who received and read the messages you sealed, withdraw them or change their end date. ' +
      'Sign in with a one-time code sent to your email address.',
    email: 'Your email address',
    emailHint: 'The address you send sealed messages from.',
    send: 'Send me a code',
    sending: 'Sending…',
  },

  code: {
    title: 'Enter your code',
    sent: (length: number, to: string) => `If ${to} may sign in here, we sent a ${length}-digit code to it by email.`,
    validFor: (duration: string) => `The code is valid for ${duration}.`,
    label: 'Code',
    submit: 'Sign in',
    checking: 'Checking…',
    resend: 'Send a new code',
    resendIn: (duration: string) => `You can ask for a new code in ${duration}.`,
    resent: 'A new code is on its way. The old one no longer works.',
    otherAddress: 'Use a different address',
    attemptsLeft: (n: number) => (n === 1 ? 'You have 1 try left.' : `You have ${n} tries left.`),
    newCode: 'Send me a new code',
  },

  list: {
    title: 'Your sealed messages',
    signedInAs: (sender: string) => `Signed in as ${sender}.`,
    search: 'Search by recipient or subject',
    searchButton: 'Search',
    showAll: 'Show all',
    noSubject: '(no subject)',
    none: 'You have not sealed any messages yet.',
    noMatch: (query: string) => `No message matches “${query}”.`,
    results: (n: number) => (n === 1 ? '1 message shown.' : `${n} messages shown.`),
    sealedOn: (date: string) => `Sealed ${date}`,
    recipients: (n: number) => (n === 1 ? '1 recipient' : `${n} recipients`),
    ended: 'Ended',
    older: 'Show older messages',
    loadingOlder: 'Loading…',
  },

  detail: {
    back: 'Back to the list',
    noSubject: '(no subject)',
    sealed: 'Sealed',
    endDate: 'End date',
    noEndDate: 'None: it stays readable until withdrawn.',
    withdrawnOn: (date: string) => `Withdrawn for everyone on ${date}.`,
    expiredOn: (date: string) => `Expired on ${date}.`,
    recipients: 'Recipients',
    signIn: 'Signs in',
    signInEmail: 'With a code by email (no mobile number)',
    signInSms: {
      header: 'By SMS, to the number the message gave',
      confirmed: 'By SMS, to the number the recipient confirmed',
      directory: 'By SMS, to the number in the contacts directory',
    },
    notified: 'Notified',
    firstOpened: 'First opened',
    lastOpened: 'Last opened',
    failedSignIns: 'Failed sign-ins',
    downloads: 'Attachments downloaded',
    replies: 'Replies sent',
    withdrawn: 'Withdrawn',
    not: 'Not yet',
    never: 'Never',
    trail: 'Trail',
    trailExplain: 'Every event of this message, with its time and the masked address of the device, as a file.',
    trailCsv: 'Download the trail as CSV',
    trailJson: 'Download the trail as JSON',
  },

  withdraw: {
    title: 'Withdraw',
    everyone: 'Withdraw for everyone',
    one: (email: string) => `Withdraw for ${email}`,
    confirmEveryone: 'Withdraw this message for all its recipients? Nobody can read or answer it any more.',
    confirmOne: (email: string) => `Withdraw this message for ${email}? They can no longer read or answer it.`,
    reason: 'Reason',
    reasonHint: 'Kept in the record; only you and the operators see it.',
    confirm: 'Yes, withdraw',
    confirmOneButton: (email: string) => `Yes, withdraw for ${email}`,
    cancel: 'Cancel',
    working: 'Withdrawing…',
    needReason: 'Please give a reason.',
    doneEveryone: 'The message was withdrawn for everyone.',
    doneOne: (email: string) => `The message was withdrawn for ${email}.`,
  },

  endDate: {
    title: 'Change the end date',
    explain: 'After this date and time the message can no longer be read, and its content is deleted.',
    label: 'New end date and time',
    hint: (zone: string) => `In your time zone (${zone}).`,
    save: 'Save the end date',
    saving: 'Saving…',
    saved: (date: string) => `The message now ends on ${date}.`,
    invalid: 'Please enter a date and a time.',
    refused: 'The end date was not accepted.',
    serverSaid: (message: string) => `The service said: ${message}`,
  },

  signOut: 'Sign out',
  signingOut: 'Signing out…',
  signOutFailed: 'You are still signed in: signing out did not work.',

  signedOut: {
    title: 'You are signed out',
    body: 'Your session on this device has ended.',
    again: 'Sign in again',
  },

  fatal: {
    title: 'This page cannot be shown',
    retry: 'Try again',
  },

  sessionEnded: 'Your session has ended. Please sign in again.',

  units: reader.units,
  errors: {
    ...reader.errors,
    invalid_code_or_email:
      'That code is not right. Please check the digits in the newest email we sent you, or ask for a new code.',
    unauthorized_user: 'This address cannot sign in here. Please use the address you send sealed messages from.',
    not_found: 'This message does not exist, or it was not sent from your address.',
    message_withdrawn: 'This message was withdrawn: it can no longer be changed.',
    message_expired: 'This message has passed its end date: it can no longer be changed.',
    mobile_required: 'A recipient has no mobile number, and this organisation requires one.',
  },
  errorFallback: reader.errorFallback,
};

export type SenderTexts = typeof en;

// Long regular expressions written as pieces on lines of their own.

/** One regular expression from pieces: their sources joined in order, with the first piece's flags. */
export function joinedRegExp(...pieces: RegExp[]): RegExp {
  return new RegExp(pieces.map((p) => p.source).join(''), pieces[0].flags);
}

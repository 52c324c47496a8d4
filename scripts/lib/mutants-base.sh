# shellcheck shell=bash disable=SC2034 # base, base_short, base_arg, base_why: the sourcing script reads them
# Sourced by scripts/mutants.sh --in-diff: which revision "the change" is diffed against, so that
# the run covers every mutant of the change or fails. Run inside the git repository.
#
# mutants_base [REV] sets base (a commit id, or the empty tree's id), base_short (its short id,
# or "the empty tree"), base_arg (what --base takes to choose it again) and base_why (how it was
# chosen):
#   - REV when given (a commit here, or a tree such as the empty tree);
#   - HEAD is the repository's first commit (no parent, not a shallow clone): the empty tree, as
#     every line of it is new;
#   - HEAD on a branch off main: the merge base of HEAD with main (else origin/main), so every
#     commit of the branch counts;
#   - HEAD on main (the merge base is HEAD itself): HEAD's parent, the commit being tested;
#   - no main anywhere and no remote (a detached copy of one branch): HEAD's parent too.
# What that needs and is missing here (a shallow clone, no main) is fetched from the remote
# (origin, else the only one) first: main, then 50 commits more, then all of the history.
# Status 1 when there is still no base, with what is missing and what to do on stderr: a
# change that cannot be told is never taken for "no change".

mutants_base() {
  local given="${1:-}" remote
  base="" base_short="" base_arg="" base_why="" _mutants_missing=""
  if [ -n "$given" ]; then
    if base="$(git rev-parse --verify --quiet "$given^{commit}")"; then
      base_short="$(git rev-parse --short "$base")"
    elif base="$(git rev-parse --verify --quiet "$given^{tree}")"; then
      base_short="$base" # a tree (the empty tree, say) has no short name of its own
    else
      echo "mutants: no commit '$given' in this repository to diff against$(_mutants_shallow_note)" >&2
      return 1
    fi
    base_arg="$base_short" base_why="given with --base"
    return 0
  fi
  if _mutants_try_base; then return 0; fi
  remote="$(_mutants_remote)"
  if [ -n "$remote" ]; then
    echo "mutants: $_mutants_missing; fetching it from $remote" >&2
    if ! _mutants_main_ref >/dev/null; then
      git fetch --quiet "$remote" "+refs/heads/main:refs/remotes/$remote/main" >&2 || true
      if _mutants_try_base; then return 0; fi
    fi
    if _mutants_shallow; then
      git fetch --quiet --deepen=50 "$remote" >&2 || true
      if _mutants_try_base; then return 0; fi
    fi
    if _mutants_shallow; then
      git fetch --quiet --unshallow "$remote" >&2 || true
      if _mutants_try_base; then return 0; fi
    fi
  fi
  local fetched=" (and no remote to fetch it from)"
  if [ -n "$remote" ]; then fetched=" (also after fetching from $remote)"; fi
  echo "mutants: cannot tell which lines changed: $_mutants_missing$fetched. Fetch the history (git fetch --unshallow; git fetch origin main), or name the revision to diff against: scripts/mutants.sh --in-diff --base REV" >&2
  return 1
}

# Chooses the base from the history present (sets what mutants_base sets); status 1, with
# $_mutants_missing saying what is missing, when that history is not here.
_mutants_try_base() {
  local head main name merge_base parent
  head="$(git rev-parse --verify --quiet 'HEAD^{commit}')" || {
    _mutants_missing="HEAD names no commit"
    return 1
  }
  if ! git rev-parse --verify --quiet 'HEAD~1^{commit}' >/dev/null && ! _mutants_shallow; then
    base="$(git hash-object -t tree /dev/null)" base_short="the empty tree"
    base_arg="$base"
    base_why="HEAD is the first commit: every line of it is new"
    return 0
  fi
  if ! main="$(_mutants_main_ref)"; then
    # A checkout with no main at all and no remote to fetch it from (a CI copy of one branch,
    # detached): the change that can be told is the commit being tested.
    if [ -z "$(_mutants_remote)" ] && parent="$(git rev-parse --verify --quiet 'HEAD~1^{commit}')"; then
      base="$parent" base_short="$(git rev-parse --short "$parent")" base_arg="$base_short"
      base_why="HEAD's parent: no branch main here and no remote to fetch it from"
      return 0
    fi
    _mutants_missing="no branch main (nor origin/main) to find where this change starts"
    return 1
  fi
  name="${main#refs/*/}"
  if ! merge_base="$(git merge-base HEAD "$main" 2>/dev/null)"; then
    _mutants_missing="no common ancestor of HEAD and $name in this$(_mutants_shallow_word) clone"
    return 1
  fi
  if [ "$merge_base" != "$head" ]; then
    base="$merge_base" base_short="$(git rev-parse --short "$merge_base")" base_arg="$base_short"
    base_why="the merge base of HEAD with $name"
    return 0
  fi
  if ! parent="$(git rev-parse --verify --quiet 'HEAD~1^{commit}')"; then
    _mutants_missing="HEAD is on $name, and its parent is not in this shallow clone"
    return 1
  fi
  base="$parent" base_short="$(git rev-parse --short "$parent")" base_arg="$base_short"
  base_why="HEAD's parent: HEAD is on $name, so the change is the commit being tested"
}

# refs/heads/main, else refs/remotes/origin/main (else the other remote's main): the first that
# exists.
_mutants_main_ref() {
  local ref remote
  remote="$(_mutants_remote)"
  for ref in refs/heads/main refs/remotes/origin/main ${remote:+"refs/remotes/$remote/main"}; do
    if git rev-parse --verify --quiet "$ref^{commit}" >/dev/null; then
      echo "$ref"
      return 0
    fi
  done
  return 1
}

# origin when there is one, else the first remote; nothing when there is none.
_mutants_remote() {
  local remotes
  remotes="$(git remote)"
  if grep -qx origin <<<"$remotes"; then echo origin; else sed -n 1p <<<"$remotes"; fi
}

_mutants_shallow() { [ "$(git rev-parse --is-shallow-repository)" = true ]; }
_mutants_shallow_word() { if _mutants_shallow; then echo " shallow"; fi; }
_mutants_shallow_note() {
  if _mutants_shallow; then echo " (a shallow clone: git fetch --unshallow may bring it)"; fi
}

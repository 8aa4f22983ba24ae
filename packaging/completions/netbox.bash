# bash completion for netbox. Everything is read from netbox itself when asked, so this
# file never goes stale when the command line grows: subcommands from the "Subcommands:"
# section of `netbox ... --help`, flags from its option lines, a flag's values from the
# {a,b} its line shows, profile names from `netbox policy check FILE --format json` for the
# policy the line names; after `--`, the agent's command is completed as a command.

_netbox_help() { netbox "$@" --help 2>/dev/null; }

_netbox_subcommands() {
  _netbox_help "$@" | awk '/^Subcommands:/ { in_list = 1; next } /^[^ ]/ { in_list = 0 } in_list && /^  [a-z]/ { print $1 }'
}

# The profile names of the policy FILE (nothing when it cannot be read).
_netbox_profiles() {
  [[ -n $1 ]] || return 0
  netbox policy check "$1" --format json 2>/dev/null |
    awk '/"agents": \[\]/ { exit } /"agents": \[/ { l = 1; next } l && /\]/ { exit } l { gsub(/[ ",]/, ""); print }'
}

_netbox() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} i w policy="" help line
  local -a path=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    if [[ $w == -- ]]; then
      # The agent's command line: bash-completion's own completion of it when it is there.
      if declare -F _command_offset >/dev/null; then
        _command_offset $((i + 1))
      elif ((COMP_CWORD == i + 1)); then
        COMPREPLY=($(compgen -c -- "$cur"))
      else
        COMPREPLY=($(compgen -f -- "$cur"))
      fi
      return 0
    fi
    if [[ $w == --policy ]]; then
      policy=${COMP_WORDS[i + 1]}
    elif [[ $w != -* && ${path[*]} == "policy check" && -z $policy ]]; then
      policy=$w  # policy check FILE
    elif [[ $w != -* ]] && _netbox_subcommands "${path[@]#help}" | grep -qxF -- "$w"; then
      path+=("$w")
    fi
  done
  help=$(_netbox_help "${path[@]}")

  # The value of a flag: its choices, a profile, or a file.
  if [[ $prev == --* && $cur != -* ]]; then
    line=$(grep -E -- "^ +(-[a-zA-Z],)?${prev}([ ,]|$)" <<<"$help" | head -n 1)
    if [[ -n $line ]]; then
      if [[ $line =~ \{([^}]*)\} ]]; then
        COMPREPLY=($(compgen -W "${BASH_REMATCH[1]//,/ }" -- "$cur"))
        return 0
      fi
      if [[ $prev == --profile || $prev == --agent ]] && [[ -n $policy ]]; then
        COMPREPLY=($(compgen -W "$(_netbox_profiles "$policy")" -- "$cur"))
        return 0
      fi
      # A flag followed by a type (TEXT, INT, ...) takes a value; one without is a switch.
      if [[ $line =~ ^\ +[^\ ]+\ [A-Z] ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
        return 0
      fi
    fi
  fi
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(grep -oE -- '^ +(-[a-zA-Z],)?--[a-z][a-z0-9-]*' <<<"$help" | grep -oE -- '--[a-z][a-z0-9-]*')" -- "$cur"))
    return 0
  fi
  if [[ ${path[*]} == help* ]]; then
    # netbox help SUBCOMMAND...: the subcommands of what follows help
    COMPREPLY=($(compgen -W "$(_netbox_subcommands "${path[@]:1}")" -- "$cur"))
    return 0
  fi
  COMPREPLY=($(compgen -W "$(_netbox_subcommands "${path[@]}")" -- "$cur"))
  # Files where the command takes some (a policy to check, the agent's command).
  grep -q '^Positionals:' <<<"$help" && COMPREPLY+=($(compgen -f -- "$cur"))
  return 0
}
complete -o filenames -F _netbox netbox

# bash completion for netbox. Flags are read from `netbox SUBCOMMAND --help`, so this file
# never goes stale when a flag is added.
_netbox() {
  local cur=${COMP_WORDS[COMP_CWORD]} sub="" i w
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    [[ $w == -- ]] && return 0  # the agent's command line: complete nothing of ours
    [[ $w == -* ]] && continue
    case $w in
      proxy | launch | audit | policy | gc | ca) [[ -z $sub ]] && sub=$w ;;
      summary | events | agents | check | suggest | init | show) [[ -n $sub ]] && sub="$sub $w" ;;
    esac
  done
  if [[ -z $sub ]]; then
    COMPREPLY=($(compgen -W "proxy launch audit policy gc ca --help --version" -- "$cur"))
    return 0
  fi
  if [[ $sub == policy && $cur != -* ]]; then
    COMPREPLY=($(compgen -W "check suggest" -- "$cur"))
    return 0
  fi
  if [[ $sub == ca && $cur != -* ]]; then
    COMPREPLY=($(compgen -W "init show" -- "$cur"))
    return 0
  fi
  if [[ $cur == -* ]]; then
    local flags
    flags=$(netbox $sub --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    [[ $sub == audit ]] && [[ -z $cur ]] && COMPREPLY+=(summary events agents)
    return 0
  fi
  [[ $sub == audit ]] && COMPREPLY=($(compgen -W "summary events agents" -- "$cur"))
  COMPREPLY+=($(compgen -f -- "$cur"))
}
complete -o filenames -F _netbox netbox

#!/usr/bin/env bash
# tests/layering_check.sh SOURCE_DIR: fails when a library file includes a header of a module above
# its own (DESIGN.md: util -> graph -> devices -> layer_models -> graph_gnn -> predictor, then
# the calibration modules measure/ -> datasets/ -> plan/ -> eval/ -> fit/ -> run/, then cli/). Each
# offending #include is printed as file:line.
set -u
cd "$1" || exit 2
order=(util graph devices layer_models graph_gnn predictor measure datasets plan eval fit run cli)
rank() { local i; for i in "${!order[@]}"; do [ "${order[$i]}" = "$1" ] && echo "$i" && return; done; echo -1; }
bad=0
for dir in "${order[@]}"; do
  mine=$(rank "$dir")
  for f in "$dir"/*.c "$dir"/*.h; do
    [ -e "$f" ] || continue
    while IFS=: read -r line inc; do
      mod=${inc#*\"}; mod=${mod%%/*}
      r=$(rank "$mod")
      if [ "$r" -gt "$mine" ]; then echo "$f:$line: includes $mod/ from $dir/"; bad=1; fi
    done < <(grep -n '^#include "[a-z_]*/' "$f" | sed 's/:#include /:/')
  done
done
exit $bad

#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Not a test: a fixture for runner_isolation.sh.  It passes its one check and exits, leaving a
# process running the way a test does when it kills a background job that was a shell function
# (`on_server cepmctl accept ... &`): the kill ends the function's subshell, not its command.
backgrounded() { sleep 1000; }
backgrounded &
sleep 0.2
kill $!
echo "TAP version 13"
echo "1..1"
echo "ok 1 leave_running: passes, with the job's command still running"

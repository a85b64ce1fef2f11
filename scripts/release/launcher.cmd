@echo off
rem b2b-sidecar with the Node.js runtime shipped beside it (node\node.exe): the host needs no
rem Node.js, and a node on PATH is not used. Example: b2b-sidecar.cmd run --config sidecar.yaml
rem --disable-sigusr1: no signal may open the inspector (docs/security.md).
"%~dp0node\node.exe" --disable-sigusr1 "%~dp0dist\cli.js" %*
exit /b %ERRORLEVEL%

@echo off
rem b2b-sidecar with the Node.js runtime shipped beside it (node\node.exe): the host needs no
rem Node.js, and a node on PATH is not used. Example: b2b-sidecar.cmd run --config sidecar.yaml
"%~dp0node\node.exe" "%~dp0dist\cli.js" %*
exit /b %ERRORLEVEL%

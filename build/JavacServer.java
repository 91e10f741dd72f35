/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 */

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

/**
 * One javac for the many compilations of the upstream export's check (build/upstream_export.py): a new javac
 * process per compilation spends most of its time starting and warming up, which the check's 50-odd
 * compilations of the same sources against the same jars repeat. Reads one javac argument file per line on
 * standard input, compiles it, writes javac's output to that file with ".log" appended, and answers with
 * javac's exit code on a line of its own.
 */
public final class JavacServer {
    private JavacServer() {
    }

    public static void main(String[] args) throws Exception {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        BufferedReader requests = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String argFile;
        while ((argFile = requests.readLine()) != null) {
            ByteArrayOutputStream output = new ByteArrayOutputStream();
            int code = javac.run(null, output, output, "@" + argFile);
            Files.write(Path.of(argFile + ".log"), output.toByteArray());
            System.out.println(code);
            System.out.flush();
        }
    }
}

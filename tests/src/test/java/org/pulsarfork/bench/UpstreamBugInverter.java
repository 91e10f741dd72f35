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
package org.pulsarfork.bench;

import java.util.Arrays;
import org.awaitility.core.ConditionTimeoutException;
import org.awaitility.core.TerminalFailureException;
import org.testng.IInvokedMethod;
import org.testng.IInvokedMethodListener;
import org.testng.ITestResult;
import org.testng.Reporter;
import org.testng.internal.thread.ThreadTimeoutException;

/**
 * Inverts the outcome of {@link BenchGroups#UPSTREAM_BUG} tests when the bench runs against the
 * upstream jars, so that the upstream run proves each reproducer can fail.
 *
 * <p>A reproducer that fails on upstream with its symptom is reported as passed, with the upstream
 * failure in the log; one that passes on upstream is reported as failed, and so is one that fails for
 * another reason. The symptom is what a reproducer asserts: a failed assertion, an awaited outcome
 * that never came (Awaitility's timeout, TestNG's {@code timeOut}: a hang), or an Awaitility
 * fail-fast condition (the loss itself, seen while waiting). Anything else thrown (a linkage error
 * against upstream's jar, an exception from the set-up) proves nothing about the bug. On our jars
 * nothing is inverted, nor on a line that {@link FixedUpstreamIn} names.
 */
public class UpstreamBugInverter implements IInvokedMethodListener {

    @Override
    public void afterInvocation(IInvokedMethod method, ITestResult result) {
        if (!method.isTestMethod() || !BenchGroups.onUpstream() || !isReproducer(method)) {
            return;
        }
        String name = method.getTestMethod().getQualifiedName();
        if (result.getStatus() == ITestResult.FAILURE && !isSymptom(result.getThrowable())) {
            result.setThrowable(new AssertionError(name + " fails on the upstream jars of "
                    + System.getProperty("pulsar.line") + " with " + result.getThrowable()
                    + ", which is not a symptom it asserts (group " + BenchGroups.UPSTREAM_BUG + ")",
                    result.getThrowable()));
        } else if (result.getStatus() == ITestResult.FAILURE) {
            Throwable upstreamFailure = result.getThrowable();
            String line = "[upstream-bug] " + name + " reproduces the upstream bug on "
                    + System.getProperty("pulsar.line") + ": " + upstreamFailure;
            System.out.println(line);
            Reporter.log(line);
            result.setStatus(ITestResult.SUCCESS);
            result.setThrowable(null);
        } else if (result.getStatus() == ITestResult.SUCCESS) {
            result.setStatus(ITestResult.FAILURE);
            result.setThrowable(new AssertionError(name + " passes on the upstream jars of "
                    + System.getProperty("pulsar.line")
                    + ": it does not reproduce the bug it is marked for (group "
                    + BenchGroups.UPSTREAM_BUG + ")"));
        }
    }

    static boolean isSymptom(Throwable failure) {
        return failure instanceof AssertionError || failure instanceof ConditionTimeoutException
                || failure instanceof TerminalFailureException || failure instanceof ThreadTimeoutException;
    }

    private static boolean isReproducer(IInvokedMethod method) {
        if (!Arrays.asList(method.getTestMethod().getGroups()).contains(BenchGroups.UPSTREAM_BUG)) {
            return false;
        }
        FixedUpstreamIn fixed = method.getTestMethod().getConstructorOrMethod().getMethod()
                .getAnnotation(FixedUpstreamIn.class);
        return fixed == null || !Arrays.asList(fixed.value()).contains(System.getProperty("pulsar.line"));
    }
}
